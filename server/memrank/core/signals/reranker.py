"""Reranker: the caller's own reranker score (``Candidate.reranker_score``), standardised within the batch.

A caller's reranker may speak any scale: a cross-encoder's logits, a hosted rerank API's relevance score, an
LLM's 0-3 grade. The signal is the logistic of the score's z-score over the population candidates that have
one (``normalizers.z_score``)::

    z_i = (s_i - mean(s)) / std(s),    reranker_i = 1 / (1 + exp(-z_i))

mean and (population) standard deviation over the m scored population candidates; 0.5 for all when m is 1 or
every score is the same. A candidate without a score is given the value of the population's lowest score (it is
scored as the batch's lowest, without moving the mean or the spread). A batch in which no population candidate
has a score gives 0 to every candidate ("absent": a profile that weighs the signal then shares its weight,
``scoring.constant``). Outside the population the value is 0.

Why the z-score: it is unchanged by any affine rescaling a x s + b (a > 0), so a weight learned on one
reranker's logits means the same on another's differently scaled logits or on graded labels; unlike min-max,
one outlying score does not squeeze every other value towards 0; unlike a percentile rank, it keeps how far
a candidate stands above the rest (out of fold on 150 LongMemEval dev questions, a fit with the rank reached
recall@5 .922, with min-max .934, with the z-score .932 and the best recall@10 and nDCG@10: ``eval/cv_reranker.py``).
A monotone non-affine change of scale (a logit's sigmoid) does change it: send the rawest score you have.
"""

from __future__ import annotations

import numpy as np

from memrank.core.batch import Batch
from memrank.core.profile import Profile
from memrank.core.reasons import Lazy, Same
from memrank.core.signals.base import RawSignal, ScoringContext
from memrank.core.signals.normalizers import z_score

ABSENT = "no reranker_score in the batch: 0"


def reranker(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """The logistic z-score of each candidate's reranker_score within the population; 0 when none has one."""
    scores = batch.reranker
    pop = np.asarray(population, dtype=bool)
    has = np.zeros(batch.n, dtype=bool) if scores is None else ~np.isnan(scores)
    rated = has & pop
    if scores is None or not rated.any():
        return RawSignal(np.zeros(batch.n), Same(batch.n, ABSENT))
    lowest_at = int(np.flatnonzero(rated)[np.argmin(scores[rated])])
    lowest = float(scores[lowest_at])
    values = z_score(np.where(has, scores, lowest), rated)
    values[pop & ~has] = values[lowest_at]
    m = int(rated.sum())

    def why(i: int) -> tuple[str, ...]:
        if not pop[i]:
            return ("gated: 0",)
        if has[i]:
            return (f"reranker_score {scores[i]:.6g}: logistic z-score among {m} scored",)
        return (f"no reranker_score: scored as the batch's lowest ({lowest:.6g})",)

    return RawSignal(values, Lazy(batch.n, why))
