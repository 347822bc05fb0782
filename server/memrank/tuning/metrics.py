"""Ranking metrics of a linear score over a ``Stack``, every query at once. Pure numpy.

For weights ``w`` the score of candidate i is ``s_i = sum_s w_s x normalised_s(i)``
(the base profile's combined score when ``w`` are its weights). The ranking is
the eligible candidates by ``s`` descending, ties in candidate order (a stable
sort); gated candidates are never returned. The metrics (``recall@k``,
``ndcg@k`` with the grades as gains, ``budget-recall@T``) are
``memrank.evaluation.metrics``', the one home of their formulas, applied to
every query's ranking at once; `memrank eval` scores with the same functions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from memrank.evaluation.metrics import budget_fill, ideal_dcg, ndcg_rows, recall_rows
from memrank.tuning.dataset import Stack, TuningError

EXAMPLES = ("recall@5", "ndcg@10", "budget-recall@512")
_NAME = re.compile(r"^(recall|ndcg|budget-recall)@([1-9][0-9]*)$")


@dataclass(frozen=True)
class Metric:
    """A metric by kind and cut-off: k candidates, or T tokens for the budget."""

    kind: str  # "recall", "ndcg" or "budget-recall"
    cutoff: int

    @property
    def name(self) -> str:
        """As written on the command line: recall@5."""
        return f"{self.kind}@{self.cutoff}"

    @staticmethod
    def parse(name: str) -> Metric:
        """``recall@K``, ``ndcg@K`` or ``budget-recall@TOKENS``; TuningError naming the forms otherwise."""
        m = _NAME.match(name)
        if m is None:
            raise TuningError(f"unknown metric {name!r}; known: recall@K, ndcg@K, budget-recall@TOKENS "
                              f"(e.g. {', '.join(EXAMPLES)})")
        return Metric(m.group(1), int(m.group(2)))


def linear_scores(stack: Stack, weights: np.ndarray) -> np.ndarray:
    """sum_s w_s x features_s, summed in signal order and skipping zero weights (queries, width)."""
    s = np.zeros(stack.eligible.shape)
    for j, w in enumerate(weights.tolist()):
        if w:
            s = s + w * stack.features[j]
    return s


def ranking(stack: Stack, weights: np.ndarray) -> np.ndarray:
    """Per query, candidate indices best first: eligible by score (ties in candidate order), then the rest."""
    s = np.where(stack.eligible, linear_scores(stack, weights), -np.inf)
    return np.argsort(-s, axis=1, kind="stable")


class Objective:
    """One metric's per-query values and mean for any weight vector over a fixed stack."""

    def __init__(self, stack: Stack, metric: Metric) -> None:
        self.stack = stack
        self.metric = metric
        self._hit = stack.eligible & (stack.grades > 0)
        self._gain = np.where(stack.eligible, stack.grades, 0.0)
        if metric.kind == "ndcg":
            self._ideal = np.array([ideal_dcg(g, metric.cutoff) for g in stack.all_grades])

    def per_query(self, weights: np.ndarray) -> np.ndarray:
        """The metric of every query (float64 (queries,))."""
        order = ranking(self.stack, weights)
        kind, k = self.metric.kind, self.metric.cutoff
        if kind == "recall":
            return recall_rows(np.take_along_axis(self._hit, order[:, :k], axis=1), self.stack.relevant)
        if kind == "ndcg":
            return ndcg_rows(np.take_along_axis(self._gain, order[:, :k], axis=1), self._ideal)
        return self._budget_recall(order, k)

    def __call__(self, weights: np.ndarray) -> float:
        """Mean of the metric over the queries (0 for none)."""
        if self.stack.size == 0:
            return 0.0
        return float(self.per_query(weights).mean())

    def _budget_recall(self, order: np.ndarray, budget: int) -> np.ndarray:
        out = np.zeros(self.stack.size)
        eligible_count = self.stack.eligible.sum(axis=1).tolist()
        for q in range(self.stack.size):
            idx = order[q, : eligible_count[q]]
            hits = self._hit[q, idx].tolist()
            found = sum(hits[i] for i in budget_fill(self.stack.tokens[q, idx].tolist(), budget))
            out[q] = found / self.stack.relevant[q]
        return out
