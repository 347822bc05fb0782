"""What every signal returns, and the one signature every signal has."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from memrank.core.batch import Batch
from memrank.core.scores import ScoringContext
from memrank.profiles.model import Profile

Reasons = tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class RawSignal:
    """A signal's raw value per candidate, with the reasons behind each."""

    values: np.ndarray  # float64 (n,), finite
    reasons: Reasons


# (batch, ctx, profile, population) -> RawSignal. ``population`` masks the
# candidates not removed by the safety and temporal gates; only batch-relative
# signals (facet fusion, IDF) read it.
SignalFn = Callable[[Batch, ScoringContext, Profile, np.ndarray], RawSignal]


def same_reason(n: int, *reasons: str) -> Reasons:
    """The same reasons for every candidate."""
    row = tuple(reasons)
    return tuple(row for _ in range(n))
