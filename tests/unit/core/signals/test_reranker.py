"""The reranker signal against its formula, worked by hand: the logistic z-score of the caller's scores."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memrank.core.signals.reranker import ABSENT, reranker
from tests.support.build import batch, run


def _scored(*scores: float | None) -> list[float]:
    return run(reranker, batch(*({"reranker_score": s} for s in scores))).values.tolist()


def _logistic_z(scores: list[float]) -> list[float]:
    """The formula, written out: population mean and standard deviation, then 1 / (1 + e^-z)."""
    mean = sum(scores) / len(scores)
    std = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    return [1 / (1 + math.exp(-(s - mean) / std)) for s in scores]


def test_the_logistic_z_score_worked_by_hand():
    # Scores 2, -1, 7.5, 0.3: mean 8.8 / 4 = 2.2; squared deviations .04, 10.24, 28.09, 3.61 -> std sqrt(10.495).
    std = math.sqrt((0.04 + 10.24 + 28.09 + 3.61) / 4)
    want = [1 / (1 + math.exp(-(s - 2.2) / std)) for s in (2.0, -1.0, 7.5, 0.3)]
    assert _scored(2.0, -1.0, 7.5, 0.3) == pytest.approx(want, abs=1e-12)


def test_a_candidate_without_a_score_gets_the_lowest_scores_value():
    # Scored 0.9, 0.2, 0.6 (the mean and spread are theirs alone); the unset one gets 0.2's value.
    b = batch({"reranker_score": 0.9}, {}, {"reranker_score": 0.2}, {"reranker_score": 0.6})
    got = run(reranker, b)
    z = _logistic_z([0.9, 0.2, 0.6])
    assert got.values.tolist() == pytest.approx([z[0], z[1], z[1], z[2]], abs=1e-12)
    assert got.reasons[1] == ("no reranker_score: scored as the batch's lowest (0.2)",)
    assert got.reasons[0] == ("reranker_score 0.9: logistic z-score among 3 scored",)


def test_no_score_in_the_batch_is_absent():
    got = run(reranker, batch({}, {}, {}))
    assert got.values.tolist() == [0.0, 0.0, 0.0]
    assert got.reasons[2] == (ABSENT,)


def test_only_the_population_counts_and_gated_candidates_get_zero():
    # c1 is gated: the statistics are over c0, c2, c3 (scores 3, 1, 2) alone; c1 gets 0.
    b = batch({"reranker_score": 3.0}, {"reranker_score": 100.0}, {"reranker_score": 1.0}, {"reranker_score": 2.0})
    got = run(reranker, b, population=np.array([True, False, True, True]))
    z = _logistic_z([3.0, 1.0, 2.0])
    assert got.values.tolist() == pytest.approx([z[0], 0.0, z[1], z[2]], abs=1e-12)
    assert got.reasons[1] == ("gated: 0",)
    # Only a gated candidate has a score: absent.
    b = batch({}, {"reranker_score": 100.0})
    assert run(reranker, b, population=np.array([True, False])).reasons[0] == (ABSENT,)


def test_one_candidate_or_equal_scores_give_one_half():
    assert _scored(4.2) == [0.5]
    assert _scored(-3.0, -3.0) == [0.5, 0.5]


finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


scores_ = st.lists(st.floats(min_value=-100, max_value=100, allow_nan=False), min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(scores_, st.floats(min_value=0.01, max_value=100), st.floats(min_value=-1000, max_value=1000))
def test_an_affine_rescaling_changes_nothing(scores, a, b):
    # Up to rounding: a shift of b loses log2(|b| / spread) bits of the differences that make the z-score.
    spread = max(scores) - min(scores)
    if 0 < spread < 1e-3:
        return
    assert _scored(*(a * s + b for s in scores)) == pytest.approx(_scored(*scores), abs=1e-6)


def test_logits_of_another_temperature_or_offset_give_the_same_signal():
    logits = [3.1, -2.0, 0.4, 7.9, -0.4]
    assert _scored(*logits) == pytest.approx(_scored(*(x / 2.5 - 11.0 for x in logits)), abs=1e-12)
    grades = [0, 1, 2, 3]  # a 0-3 grade and the same grade as 0-100
    assert _scored(*grades) == pytest.approx(_scored(*(100 * g / 3 for g in grades)), abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), finite), min_size=1, max_size=12))
def test_bounded_in_unit_interval(scores):
    values = _scored(*scores)
    assert all(0.0 <= v <= 1.0 for v in values)
