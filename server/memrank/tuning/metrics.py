"""Ranking metrics of a linear score over a ``Stack``, every query at once. Pure numpy.

For weights ``w`` the score of candidate i is ``s_i = sum_s w_s x normalised_s(i)``
(the base profile's combined score when ``w`` are its weights). The ranking is
the eligible candidates by ``s`` descending, ties in candidate order (a stable
sort); gated candidates are never returned. With ``g_i`` the graded relevance
and ``R`` every relevant item of the query (candidates or not):

- ``recall@k``  = |{i in top k : g_i > 0}| / |{r in R : g_r > 0}|
- ``ndcg@k``    = sum_{rank j <= k} g_(j) / log2(j + 1), divided by the same sum
  over R's grades sorted descending (grades are the gains; 0/1 grades give
  `memrank eval`'s binary nDCG)
- ``budget-recall@T`` = recall of the candidates a T-token budget takes, filled
  greedily in rank order (one that does not fit is skipped and the next tried,
  as ``memrank.evaluation.metrics.budget_pick`` and the sidecar's selector do)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

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


def _discounts(k: int) -> np.ndarray:
    return np.asarray(1.0 / np.log2(np.arange(2, k + 2)), dtype=np.float64)


class Objective:
    """One metric's per-query values and mean for any weight vector over a fixed stack."""

    def __init__(self, stack: Stack, metric: Metric) -> None:
        self.stack = stack
        self.metric = metric
        self._hit = stack.eligible & (stack.grades > 0)
        self._gain = np.where(stack.eligible, stack.grades, 0.0)
        if metric.kind == "ndcg":
            d = _discounts(metric.cutoff)
            self._ideal = np.array([float(np.sort(g)[::-1][: metric.cutoff] @ d[: min(g.size, metric.cutoff)])
                                    for g in stack.all_grades])

    def per_query(self, weights: np.ndarray) -> np.ndarray:
        """The metric of every query (float64 (queries,))."""
        order = ranking(self.stack, weights)
        kind, k = self.metric.kind, self.metric.cutoff
        if kind == "recall":
            hits = np.take_along_axis(self._hit, order[:, :k], axis=1).sum(axis=1)
            return np.asarray(hits / self.stack.relevant, dtype=np.float64)
        if kind == "ndcg":
            gains = np.take_along_axis(self._gain, order[:, :k], axis=1)
            dcg = gains @ _discounts(k)[: gains.shape[1]]
            return np.asarray(np.divide(dcg, self._ideal, out=np.zeros_like(dcg), where=self._ideal > 0),
                              dtype=np.float64)
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
            tokens = self.stack.tokens[q, idx].tolist()
            hits = self._hit[q, idx].tolist()
            smallest = min(tokens, default=0)
            used = found = 0
            for t, h in zip(tokens, hits, strict=True):
                if used + t <= budget:
                    used += t
                    found += h
                    if used + smallest > budget:  # nothing left can fit
                        break
            out[q] = found / self.stack.relevant[q]
        return out
