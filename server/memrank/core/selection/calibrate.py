"""rank-calibration-v1: non-overlapping score buckets per rank position.

Stage objectives (fused relevance, a caller's cross-encoder, MMR gains) are
not on one scale, so the public score is not any of them. For k selected
memories, rank r (1-based) owns the bucket ``(1 - r/k, 1 - (r-1)/k]`` of
width ``w = 1/k``. The prior score p (the final score after every stage,
clipped to [0, 1]) is kept inside its bucket by an affine map::

    score = lower + w * (MARGIN + (1 - 2 * MARGIN) * clip(p, 0, 1))

Buckets do not overlap and the map never touches a bucket edge, so public
scores strictly decrease with rank while a higher prior still gives a higher
score within its bucket.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SCHEME = "rank-calibration-v1"
MARGIN = 0.1


@dataclass(frozen=True)
class Buckets:
    """Bucket bounds and public scores, one entry per rank."""

    lower: np.ndarray
    upper: np.ndarray
    prior: np.ndarray
    score: np.ndarray


def calibrate(prior_in_rank_order: np.ndarray) -> Buckets:
    """Public scores for priors listed in rank order (best first)."""
    k = prior_in_rank_order.shape[0]
    if k == 0:
        empty = np.zeros(0)
        return Buckets(empty, empty, empty, empty)
    idx = np.arange(k, dtype=np.float64)
    width = 1.0 / k
    # 1 - r/k as written (1 - r x (1/k) differs in the last bit for some r and k, and receipts bind the bits).
    upper = 1.0 - idx / k
    lower = 1.0 - (idx + 1.0) / k
    p = prior_in_rank_order.clip(0.0, 1.0)
    score = lower + width * (MARGIN + (1.0 - 2.0 * MARGIN) * p)
    return Buckets(lower, upper, prior_in_rank_order.astype(np.float64), score)
