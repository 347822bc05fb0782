"""Per-question ranking metrics against a question's evidence turns. Pure: lists and numpy in, floats out.

For a ranking ``r`` (turn ids, best first) and evidence set ``E``:

- ``recall@k``  = |E ∩ r[:k]| / |E|
- ``anyhit@5``  = 1 if E ∩ r[:5] else 0
- ``ndcg@10``   = sum over hits at 1-based rank i <= 10 of 1 / log2(i + 1),
  divided by sum_{i=1..min(|E|, 10)} 1 / log2(i + 1)  (binary gains)
- ``budget_recall@512`` = recall of the memories a 512-token budget takes
  when filled greedily in rank order (a memory that does not fit is skipped
  and the next one tried, as the sidecar's selector does)
- ``redundancy@5`` = share of the pairs among r[:5] whose embedding cosine
  is >= 0.9 (0 when fewer than two memories were returned)
"""

from __future__ import annotations

import math
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


def recall_at(ranking: Sequence[str], evidence: frozenset[str], k: int) -> float:
    """Share of the evidence in the top k."""
    return len(evidence.intersection(ranking[:k])) / len(evidence)


def ndcg_at(ranking: Sequence[str], evidence: frozenset[str], k: int) -> float:
    """Binary-gain nDCG@k."""
    dcg = sum(1.0 / math.log2(i + 2) for i, m in enumerate(ranking[:k]) if m in evidence)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(evidence), k)))
    return dcg / ideal


def budget_pick(ranking: Sequence[str], tokens: Mapping[str, int], budget: int = BUDGET_TOKENS) -> list[str]:
    """The memories a token budget takes, filled greedily in rank order (skip what does not fit)."""
    used, out = 0, []
    for m in ranking:
        if used + tokens[m] <= budget:
            out.append(m)
            used += tokens[m]
    return out


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
