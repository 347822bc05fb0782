"""Metrics of a linear score over a Stack, with expected values written as the formula."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memrank.evaluation.metrics import budget_pick, ndcg_at, recall_at
from memrank.tuning.dataset import Query, Stack, TuningError
from memrank.tuning.metrics import Metric, Objective, ranking


def _query(scores: list[float], grades: list[float], eligible: list[bool] | None = None,
           tokens: list[int] | None = None, outside: tuple[float, ...] = ()) -> Query:
    n = len(scores)
    return Query("k", "g", np.array([scores], dtype=np.float64), np.array(eligible or [True] * n),
                 np.array(grades, dtype=np.float64), np.array(tokens or [1] * n, dtype=np.int64),
                 np.array(outside, dtype=np.float64))


def _value(q: Query, metric: str) -> float:
    return Objective(Stack.of([q], 1), Metric.parse(metric))(np.array([1.0]))


def test_recall_counts_positive_grades_over_every_relevant_item() -> None:
    # Ranked: c0 (0.9), c2 (0.8), c1 (0.5), c3 (0.1); relevant c1 (grade 2), c3 (grade 1) and one outside.
    q = _query([0.9, 0.5, 0.8, 0.1], [0, 2, 0, 1], outside=(1.0,))
    assert _value(q, "recall@3") == pytest.approx(1 / 3)
    assert _value(q, "recall@4") == pytest.approx(2 / 3)


def test_gated_candidates_are_never_returned() -> None:
    q = _query([0.9, 0.5], [1, 0], eligible=[False, True])
    assert _value(q, "recall@5") == 0.0


def test_ndcg_uses_grades_as_gains() -> None:
    # Ranked c0 (grade 0), c1 (grade 1), c2 (grade 2); ideal 2, 1.
    q = _query([0.9, 0.5, 0.4], [0, 1, 2])
    dcg = 1 / math.log2(3) + 2 / math.log2(4)
    ideal = 2 / math.log2(2) + 1 / math.log2(3)
    assert _value(q, "ndcg@10") == pytest.approx(dcg / ideal)
    assert _value(q, "ndcg@2") == pytest.approx((1 / math.log2(3)) / ideal)


def test_ndcg_ideal_counts_relevant_items_outside_the_candidates() -> None:
    q = _query([0.9], [1], outside=(3.0,))
    assert _value(q, "ndcg@10") == pytest.approx(1 / (3 + 1 / math.log2(3)))


def test_binary_ndcg_and_recall_match_memrank_eval() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        scores = rng.random(12).round(2).tolist()  # rounded: ties in candidate order, as in a stable sort
        grades = (rng.random(12) < 0.25).astype(float)
        grades[0] = 1.0
        q = _query(scores, grades.tolist())
        ids = [f"c{i}" for i in np.argsort(-np.array(scores), kind="stable").tolist()]
        evidence = frozenset(f"c{i}" for i in np.flatnonzero(grades).tolist())
        assert _value(q, "ndcg@10") == pytest.approx(ndcg_at(ids, evidence, 10))
        assert _value(q, "recall@5") == pytest.approx(recall_at(ids, evidence, 5))


def test_budget_recall_fills_greedily_and_skips_what_does_not_fit() -> None:
    # Rank order c0 (300 tokens), c1 (300, relevant: does not fit after c0), c2 (200, relevant: fits), c3 (12).
    q = _query([0.9, 0.8, 0.7, 0.6], [0, 1, 1, 1], tokens=[300, 300, 200, 12])
    assert _value(q, "budget-recall@512") == pytest.approx(2 / 3)  # 300 + 200 + 12 = 512: c2 and c3
    tokens = {"c0": 300, "c1": 300, "c2": 200, "c3": 12}
    assert budget_pick(["c0", "c1", "c2", "c3"], tokens) == ["c0", "c2", "c3"]


def test_ties_keep_candidate_order_and_gated_go_last() -> None:
    stack = Stack.of([_query([0.5, 0.7, 0.5, 0.9], [0, 0, 0, 0], eligible=[True, True, True, False])], 1)
    assert ranking(stack, np.array([1.0])).tolist() == [[1, 0, 2, 3]]


def test_queries_of_different_widths_are_padded() -> None:
    a = _query([0.1, 0.9], [1, 0])
    b = _query([0.3, 0.2, 0.8, 0.4], [0, 0, 0, 1])
    per = Objective(Stack.of([a, b], 1), Metric.parse("recall@1")).per_query(np.array([1.0]))
    assert per.tolist() == [0.0, 0.0]
    per = Objective(Stack.of([a, b], 1), Metric.parse("recall@2")).per_query(np.array([1.0]))
    assert per.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("name", ["mrr", "recall", "recall@0", "ndcg@x", "budget_recall@512"])
def test_unknown_metric_names_the_known_forms(name: str) -> None:
    with pytest.raises(TuningError, match=r"unknown metric .*recall@K, ndcg@K, budget-recall@TOKENS"):
        Metric.parse(name)
