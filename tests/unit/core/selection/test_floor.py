"""The covering set's similarity floor (a profile's ``diversity_floor``) against hand-worked picks and gains."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from memrank.core.batch import CandidateInput, RankParams, batch_from_rows
from memrank.core.pipeline import rank
from memrank.core.profile import Profile, SignalSpec
from memrank.core.selection.covering import penalty
from memrank.core.selection.select import Pool, SelectParams, select
from memrank.core.types import DropReason


def test_penalty_by_formula() -> None:
    s = np.array([0.0, 0.5, 0.7, 0.85, 1.0])
    assert penalty(s, 0.0).tolist() == s.tolist()  # off: the raw similarity
    assert penalty(s, 0.7).tolist() == pytest.approx([0.0, 0.0, 0.0, (0.85 - 0.7) / (1 - 0.7), 1.0])
    assert penalty(s, 0.5).tolist() == pytest.approx([0.0, 0.0, 0.2 / 0.5, 0.35 / 0.5, 1.0])
    assert penalty(s, 1.0).tolist() == [0.0] * 5  # floor 1: no penalty at all


# a = (1, 0), b = (0.8, 0.6), c = (0, 1), d = a copy of a: cos(a, b) = 0.8, cos(b, c) = 0.6, cos(a, c) = 0,
# cos(a, d) = 1 (>= dedupe 0.92: REDUNDANT whatever the floor).
ROWS = [CandidateInput("a", embedding=(1.0, 0.0)), CandidateInput("b", embedding=(0.8, 0.6)),
        CandidateInput("c", embedding=(0.0, 1.0)), CandidateInput("d", embedding=(1.0, 0.0))]
SCORE = np.array([1.0, 0.9, 0.85, 0.95])


def _select(floor: float):  # type: ignore[no-untyped-def]
    batch = batch_from_rows(ROWS)
    pool = Pool(("other",) * 4, np.zeros(4, dtype=np.int64), SCORE, np.array([0, 2, 3, 1]), np.ones(4, dtype=bool))
    return select(batch, pool, SelectParams((), 0, 0, 0.9, 0.92, floor))


def test_no_floor_pushes_the_similar_one_down() -> None:
    sel = _select(0.0)
    # 1: a, 0.9 x 1.0. 2: b 0.9 x 0.9 - 0.1 x 0.8 = 0.73 < c 0.9 x 0.85 - 0 = 0.765.
    # 3: b, max similarity now 0.8 (a): 0.73.
    assert sel.picked.tolist() == [0, 2, 1]
    assert sel.gain[[0, 2, 1]].tolist() == pytest.approx([0.9 * 1.0, 0.9 * 0.85, 0.9 * 0.9 - 0.1 * 0.8], abs=1e-6)
    assert sel.rest.tolist() == [3] and sel.rest_reason.tolist() == [DropReason.REDUNDANT]
    assert sel.rest_cover.tolist() == [0]


def test_floor_penalises_only_similarity_above_it() -> None:
    sel = _select(0.7)
    # 2: b 0.9 x 0.9 - 0.1 x (0.8 - 0.7) / 0.3 = 0.7767 > c 0.765. 3: c, cos(b, c) 0.6 < 0.7 costs nothing: 0.765.
    assert sel.picked.tolist() == [0, 1, 2]
    assert sel.gain[[0, 1, 2]].tolist() == pytest.approx(
        [0.9 * 1.0, 0.9 * 0.9 - 0.1 * (0.8 - 0.7) / (1 - 0.7), 0.9 * 0.85], abs=1e-6)
    # The copy d is still dropped on the raw similarity, covered by a.
    assert sel.rest.tolist() == [3] and sel.rest_reason.tolist() == [DropReason.REDUNDANT]
    assert sel.rest_cover.tolist() == [0]


def test_floor_one_keeps_only_the_dedupe() -> None:
    sel = _select(1.0)
    assert sel.picked.tolist() == [0, 1, 2]  # by score: no penalty
    assert sel.gain[[0, 1, 2]].tolist() == pytest.approx([0.9, 0.9 * 0.9, 0.9 * 0.85])
    assert sel.rest_reason.tolist() == [DropReason.REDUNDANT] and sel.rest_cover.tolist() == [0]


def test_pipeline_reports_the_floor_and_the_gain_as_final_score() -> None:
    # One signal, retrieval_score as is (weight 1): scores 1.0, 0.9, 0.85 as above, lambda 0.9, floor 0.7.
    base = Profile("p", "", (SignalSpec("retrieval", 1.0),), diversity_lambda=0.9, gate_zero_importance=False)
    rows = [replace(r, retrieval_score=s) for r, s in zip(ROWS[:3], SCORE[:3].tolist(), strict=True)]
    out = rank(batch_from_rows(rows), RankParams("", 0.0, "p"), {"p": replace(base, diversity_floor=0.7)})
    assert [out.ranked.tolist(), out.final[out.ranked].tolist()] == [
        [0, 1, 2], pytest.approx([0.9, 0.9 * 0.9 - 0.1 * 0.1 / 0.3, 0.9 * 0.85], abs=1e-6)]
    assert next(r for r in out.stages[0] if r.stage == "diversity").objective == (
        "MMR covering set, lambda 0.9, similarity cosine, penalty above similarity 0.7")
    plain = rank(batch_from_rows(rows), RankParams("", 0.0, "p"), {"p": base})
    assert plain.ranked.tolist() == [0, 2, 1]
    assert next(r for r in plain.stages[0] if r.stage == "diversity").objective == (
        "MMR covering set, lambda 0.9, similarity cosine")
