"""Scoring entry point (placeholder: relevance = retrieval_score only; replaced by the scoring core)."""

from __future__ import annotations

import numpy as np

from memrank.core.batch import Batch
from memrank.core.scores import Scores, ScoringContext, SignalColumn
from memrank.profiles.model import Profile


def score(batch: Batch, ctx: ScoringContext, profile: Profile) -> Scores:
    """Score every candidate of the batch under the profile."""
    n = batch.n
    raw = batch.retrieval.astype(np.float64)
    col = SignalColumn("relevance", 1.0, "none", raw, raw, raw.copy(), tuple(("retrieval_score",) for _ in range(n)))
    zeros = np.zeros(n)
    return Scores((col,), raw.copy(), zeros, zeros.copy(), np.zeros(n, dtype=np.int8), tuple(() for _ in range(n)),
                  np.full(n, 0.5))
