"""What every signal reads and returns, and the one signature every signal has."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from memrank.core.batch import Batch
from memrank.core.features import FeatureStore
from memrank.core.profile import Profile
from memrank.core.reasons import Same

# Up to this many memories, importance, lexical and safety read each memory in Python rather than column-wise:
# the column-wise passes cost a few dozen to ~150 numpy calls whatever the batch size. Each use names what
# reading column-wise instead costs at 1 x 384 (``python -m bench.instructions``, the only bench size <= 8).
SMALL_BATCH = 8

# Per candidate, a tuple of reason strings; usually a lazy ``core.reasons`` column.
Reasons = Sequence[tuple[str, ...]]


@dataclass(frozen=True)
class ScoringContext:
    """Request-level inputs the signals may read (never the clock)."""

    query: str
    reference_time: float  # epoch seconds
    explicit_lookup: bool = False
    provenance_key: bytes | None = None  # HMAC key proving privileged sources
    features: FeatureStore | None = None  # the runtime's store of memories' own features (``core.features``)


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
    return Same(n, *reasons)
