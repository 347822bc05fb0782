"""Similarity, calibration and shadow statistics against hand-worked values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memrank.core.batch import CandidateInput, batch_from_rows
from memrank.core.explain.shadow import kendall_tau_b, overlap_at_k
from memrank.core.selection.calibrate import MARGIN, calibrate
from memrank.core.selection.similarity import Similarity


def test_shingles_are_unigrams_and_bigrams() -> None:
    # {oat, milk, oat milk, milk oat} against {milk, oat, milk oat}: 3 shared of 4
    sim = Similarity(batch_from_rows([CandidateInput("a", content="Oat milk, oat milk"),
                                      CandidateInput("b", content="milk oat")]))
    assert sim.row(0).tolist() == [1.0, 3 / 4]


def test_shingle_jaccard_by_hand() -> None:
    rows = [CandidateInput("a", content="likes green tea"), CandidateInput("b", content="likes black tea"),
            CandidateInput("c", content="")]
    sim = Similarity(batch_from_rows(rows))
    assert sim.kind == "shingle_jaccard"
    # a: likes, green, tea, "likes green", "green tea"; b: likes, black, tea, "likes black", "black tea".
    # Shared: likes, tea -> 2 / (5 + 5 - 2) = 0.25.
    assert sim.row(0).tolist() == pytest.approx([1.0, 0.25, 0.0])
    assert sim.row(2).tolist() == [0.0, 0.0, 0.0]


def test_cosine_when_every_candidate_has_an_embedding() -> None:
    rows = [CandidateInput("a", embedding=(1.0, 0.0)), CandidateInput("b", embedding=(1.0, 1.0)),
            CandidateInput("c", embedding=(-1.0, 0.0))]
    sim = Similarity(batch_from_rows(rows))
    assert sim.kind == "cosine"
    # cos(a, b) = 1/sqrt(2); cos(a, c) = -1, clipped at 0.
    assert sim.row(0).tolist() == pytest.approx([1.0, 1 / math.sqrt(2), 0.0], abs=1e-6)


def test_shingles_when_one_embedding_is_missing() -> None:
    rows = [CandidateInput("a", content="x", embedding=(1.0, 0.0)), CandidateInput("b", content="x")]
    assert Similarity(batch_from_rows(rows)).kind == "shingle_jaccard"


def test_calibration_buckets_by_formula() -> None:
    b = calibrate(np.array([0.9, 0.95, -0.2]))
    k, w = 3, 1 / 3
    assert b.upper.tolist() == pytest.approx([1, 1 - w, 1 - 2 * w])
    assert b.lower.tolist() == pytest.approx([1 - w, 1 - 2 * w, 0])
    expected = [1 - w + w * (MARGIN + (1 - 2 * MARGIN) * 0.9),
                1 - 2 * w + w * (MARGIN + (1 - 2 * MARGIN) * 0.95),
                0 + w * (MARGIN + (1 - 2 * MARGIN) * 0.0)]
    assert b.score.tolist() == pytest.approx(expected)
    assert k == len(b.score) and all(np.diff(b.score) < 0)


def test_overlap_and_tau_by_hand() -> None:
    assert overlap_at_k(["a", "b", "c"], ["c", "x", "a", "b"]) == (3, 2 / 3)
    assert overlap_at_k([], []) == (0, 1.0)
    # Common a, b, c: real order a<b<c, shadow c<a<b: pairs (a,b)+ (a,c)- (b,c)- -> (1 - 2) / 3.
    assert kendall_tau_b(["a", "b", "c"], ["c", "x", "a", "b"]) == pytest.approx(-1 / 3)
    assert kendall_tau_b(["a"], ["a"]) == 1.0
