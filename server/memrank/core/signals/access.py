"""Access bonuses from how often a memory was retrieved before.

- ``access`` (the Go scorer's): min(access_count / 50, 0.10), in [0, 0.10];
  it saturates at 5 accesses, so it barely separates memories.
- ``access_log`` (memrank's): min(1, ln(1 + access_count) / ln(1 + 50)), in
  [0, 1]; diminishing returns, saturating at 50 accesses, so the first few
  retrievals matter most and no memory grows without bound.
"""

from __future__ import annotations

import math

import numpy as np

from memrank.core.batch import Batch
from memrank.core.profile import Profile
from memrank.core.signals.base import RawSignal, ScoringContext

ACCESS_DIVISOR = 50.0
ACCESS_CAP = 0.10
LOG_SATURATION = 50.0


def _reasons(counts: np.ndarray) -> tuple[tuple[str, ...], ...]:
    listed = counts.tolist()
    why = {c: (f"access_count {c}",) for c in set(listed)}  # few distinct counts: format each once
    return tuple(map(why.__getitem__, listed))


def access(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """min(access_count / 50, 0.10)."""
    counts = np.maximum(batch.access_count, 0)
    values = np.minimum(counts / ACCESS_DIVISOR, ACCESS_CAP)
    return RawSignal(values.astype(np.float64), _reasons(counts))


def access_log(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """min(1, ln(1 + access_count) / ln(51))."""
    counts = np.maximum(batch.access_count, 0)
    values = np.minimum(1.0, np.log1p(counts.astype(np.float64)) / math.log1p(LOG_SATURATION))
    return RawSignal(values, _reasons(counts))
