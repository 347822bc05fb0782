"""The evaluation metrics, with expected values written as formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memrank.evaluation.metrics import (
    budget_fill,
    budget_pick,
    ideal_dcg,
    ndcg_at,
    ndcg_rows,
    recall_at,
    recall_rows,
    redundancy,
    score_ranking,
)
from memrank.evaluation.retrieval import baseline_orders
from tests.support import eval_fixture as fixture

RANKING = ["a", "b", "c", "d", "e", "f"]


def test_recall_and_ndcg() -> None:
    ev = frozenset({"b", "e", "z"})
    assert recall_at(RANKING, ev, 1) == 0.0
    assert recall_at(RANKING, ev, 5) == 2 / 3
    assert ndcg_at(RANKING, ev, 10) == pytest.approx((1 / math.log2(3) + 1 / math.log2(6))
                                                     / (1 + 1 / math.log2(3) + 1 / math.log2(4)))
    assert ndcg_at(["b"], frozenset({"b"}), 10) == 1.0


def test_budget_skips_what_does_not_fit_and_tries_the_next() -> None:
    tokens = {"a": 300, "b": 250, "c": 200, "d": 20, "e": 1, "f": 1}
    # a (300); b: 300 + 250 > 512, skipped; c: 300 + 200 = 500; d: 500 + 20 > 512, skipped; e, f: 501, 502.
    assert budget_pick(RANKING, tokens, 512) == ["a", "c", "e", "f"]


def test_the_row_forms_by_formula() -> None:
    """The forms `memrank tune` applies to every query at once: graded gains, a zero ideal gives 0."""
    hits = np.array([[True, False, True], [False, False, False]])
    assert recall_rows(hits, np.array([4.0, 1.0])).tolist() == [2 / 4, 0 / 1]
    grades = np.array([1.0, 3.0, 0.0, 2.0])  # sorted descending: 3, 2, 1, 0
    assert ideal_dcg(grades, 2) == pytest.approx(3 / math.log2(2) + 2 / math.log2(3))
    assert ideal_dcg(np.zeros(0), 10) == 0.0
    gains = np.array([[0.0, 2.0], [1.0, 0.0]])
    ideal = np.array([ideal_dcg(np.array([2.0, 1.0]), 2), 0.0])
    best = 2 / math.log2(2) + 1 / math.log2(3)
    assert ndcg_rows(gains, ideal).tolist() == pytest.approx([(2 / math.log2(3)) / best, 0.0])


def test_budget_fill_stops_once_nothing_can_fit() -> None:
    # 300 (used 300); 250 skipped (550 > 512); 200 (500); 20 skipped (520); 1 (501); 10 (511); 1 (512); then
    # 512 + 1 (the smallest) > 512 ends the fill: the last two are not looked at.
    assert budget_fill([300, 250, 200, 20, 1, 10, 1, 1, 1], 512) == [0, 2, 4, 5, 6]
    assert budget_fill([], 512) == []


def test_a_question_without_evidence_has_no_recall() -> None:
    with pytest.raises(ValueError, match="without evidence"):
        recall_at(RANKING, frozenset(), 5)


def test_redundancy_counts_pairs_at_or_above_the_threshold() -> None:
    x = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert redundancy(x) == 1 / 3  # 1 of the C(3, 2) = 3 pairs
    assert redundancy(x[:1]) == 0.0
    c = 0.9
    y = np.array([[1.0, 0.0], [c, math.sqrt(1 - c * c)]])
    assert redundancy(y) == 1.0


def test_score_ranking_without_vectors_has_no_redundancy() -> None:
    s = score_ranking(RANKING, ["a"], dict.fromkeys(RANKING, 1), None)
    assert (s.recall_at(1), s.anyhit5, s.ndcg10, s.budget_recall, s.redundancy5) == (1.0, 1.0, 1.0, 1.0, 0.0)


def test_baselines_by_formula() -> None:
    conv = fixture.conversation()
    from memrank.evaluation.data import _conversation

    c = _conversation(conv)
    n = len(c.turns)
    bm25 = np.zeros(n)
    bm25[[0, 1, 2]] = [3.0, 1.0, 2.0]
    dense = np.linspace(1.0, 0.0, n)  # turn 0 best
    dense[2] = 0.99
    orders = baseline_orders(c, bm25, dense)
    assert orders["bm25"][:3].tolist() == [0, 2, 1]
    # minmax: 0.5 * bm25 / 3 + 0.5 * (dense - min) / (max - min): turn 2 = 0.5 * 2/3 + 0.5 * 0.99 > turn 1.
    assert orders["minmax"][:3].tolist() == [0, 2, 1]
    # rrf: turn 1 has 1/(60 + 3) + 1/(60 + 3) (3rd in both), turn 2 has 1/(60 + 2) + 1/(60 + 2).
    assert orders["rrf"][:3].tolist() == [0, 2, 1]
    assert orders["recent"][:2].tolist() == [n - 1, n - 2]
