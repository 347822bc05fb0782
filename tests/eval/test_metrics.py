"""The evaluation metrics, with expected values written as formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memrank.evaluation.metrics import budget_pick, ndcg_at, recall_at, redundancy, score_ranking
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
