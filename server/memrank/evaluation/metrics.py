"""Ranking metrics, the one home of their formulas: ``memrank eval`` scores one ranking per question with the
``*_at`` forms, ``memrank tune`` (``memrank.tuning.metrics.Objective``) every query of a stack at once with the
row forms beneath them. Pure: lists and numpy in, floats out.

For a ranking ``r`` (best first; each item once), graded relevance ``g`` (0 = not relevant; a question's
evidence turns are grade 1) and ``R`` every relevant item (ranked or not):

- ``recall@k``  = |{i in r[:k] : g_i > 0}| / |{i in R : g_i > 0}|
- ``ndcg@k``    = sum over rank j <= k of g_(j) / log2(j + 1), divided by the same sum over R's grades
  sorted descending (binary grades give binary nDCG; 0 when nothing is relevant)
- ``budget_recall@T`` = recall of the items a T-token budget takes when filled greedily in rank order (an
  item that does not fit is skipped and the next one tried, as the sidecar's selector does)
- ``anyhit@5``  = 1 if r[:5] holds a relevant item, else 0
- ``redundancy@5`` = share of the pairs among r[:5] whose embedding cosine is >= 0.9 (0 when fewer than
  two memories were returned)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

CURVE_KS = tuple(range(1, 21))
BUDGET_TOKENS = 512
REDUNDANT_COSINE = 0.9


@dataclass(frozen=True)
class QuestionScores:
    """Every metric of one ranking for one question."""

    recall: tuple[float, ...]  # recall@k for k in CURVE_KS
    anyhit5: float
    ndcg10: float
    budget_recall: float
    redundancy5: float

    def recall_at(self, k: int) -> float:
        """recall@k (k in CURVE_KS)."""
        return self.recall[CURVE_KS.index(k)]


def discounts(k: int) -> np.ndarray:
    """nDCG's position discounts 1 / log2(j + 1) for ranks j = 1..k (float64 (k,))."""
    return np.asarray(1.0 / np.log2(np.arange(2, k + 2)), dtype=np.float64)


def recall_rows(hits: np.ndarray, relevant: np.ndarray) -> np.ndarray:
    """recall per row: ``hits`` (rows, k) marks the relevant items of each ranking's top k (bool or 0/1),
    ``relevant`` (rows,) counts every relevant item (the denominator)."""
    return np.asarray(hits.sum(axis=1) / relevant, dtype=np.float64)


def ideal_dcg(grades: np.ndarray, k: int) -> float:
    """The DCG@k of the best possible ranking: every relevant grade (ranked or not), sorted descending."""
    return float(np.sort(grades)[::-1][:k] @ discounts(k)[: min(grades.size, k)])


def ndcg_rows(gains: np.ndarray, ideal: np.ndarray) -> np.ndarray:
    """nDCG per row: ``gains`` (rows, at most k) the grades in rank order, ``ideal`` (rows,) each row's
    ``ideal_dcg``; 0 where the ideal is 0 (nothing relevant)."""
    dcg = gains @ discounts(gains.shape[1])
    return np.asarray(np.divide(dcg, ideal, out=np.zeros_like(dcg), where=ideal > 0), dtype=np.float64)


def budget_fill(tokens: Sequence[int], budget: int) -> list[int]:
    """The places (0-based, in rank order) a token budget takes, filled greedily: an item that does not fit is
    skipped and the next one tried; the fill stops once not even the smallest item would fit."""
    smallest = min(tokens, default=0)
    used, taken = 0, []
    for i, t in enumerate(tokens):
        if used + t <= budget:
            taken.append(i)
            used += t
            if used + smallest > budget:  # nothing left can fit
                break
    return taken


def _hits(ranking: Sequence[str], evidence: frozenset[str], k: int) -> np.ndarray:
    if not evidence:
        raise ValueError("a question without evidence has no recall or nDCG")
    return np.array([[1.0 if m in evidence else 0.0 for m in ranking[:k]]])


def recall_at(ranking: Sequence[str], evidence: frozenset[str], k: int) -> float:
    """Share of the evidence in the top k."""
    return float(recall_rows(_hits(ranking, evidence, k), np.array([len(evidence)]))[0])


def ndcg_at(ranking: Sequence[str], evidence: frozenset[str], k: int) -> float:
    """Binary-gain nDCG@k."""
    ideal = np.array([ideal_dcg(np.ones(len(evidence)), k)])
    return float(ndcg_rows(_hits(ranking, evidence, k), ideal)[0])


def budget_pick(ranking: Sequence[str], tokens: Mapping[str, int], budget: int = BUDGET_TOKENS) -> list[str]:
    """The memories a token budget takes, filled greedily in rank order (skip what does not fit)."""
    return [ranking[i] for i in budget_fill([tokens[m] for m in ranking], budget)]


def redundancy(unit_vectors: np.ndarray, threshold: float = REDUNDANT_COSINE) -> float:
    """Share of pairs of rows (unit vectors) with cosine >= threshold; 0 for fewer than two rows."""
    n = unit_vectors.shape[0]
    if n < 2:
        return 0.0
    sim = unit_vectors @ unit_vectors.T
    upper = sim[np.triu_indices(n, k=1)]
    return float((upper >= threshold).mean())


def score_ranking(ranking: Sequence[str], evidence: Sequence[str], tokens: Mapping[str, int],
                  vectors: Mapping[str, np.ndarray] | None) -> QuestionScores:
    """All metrics of one ranking; redundancy is 0 when there are no embeddings."""
    ev = frozenset(evidence)
    top5 = list(ranking[:5])
    red = redundancy(np.stack([vectors[m] for m in top5])) if vectors is not None and top5 else 0.0
    return QuestionScores(
        recall=tuple(recall_at(ranking, ev, k) for k in CURVE_KS),
        anyhit5=1.0 if ev.intersection(top5) else 0.0,
        ndcg10=ndcg_at(ranking, ev, 10),
        budget_recall=len(ev.intersection(budget_pick(ranking, tokens))) / len(ev),
        redundancy5=red,
    )
