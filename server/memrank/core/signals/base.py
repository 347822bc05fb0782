"""What every signal reads and returns, and the one signature every signal has."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memrank.core.batch import Batch
from memrank.core.profile import Profile
from memrank.core.reasons import Same

# Up to this many memories, importance, lexical and safety read each memory in Python rather than column-wise:
# the column-wise passes cost a few dozen to ~150 numpy calls whatever the batch size. Each use names what
# reading column-wise instead costs at 1 x 384, the only bench size <= 8, in both request forms (2026-12-06:
# ``python -m bench.instructions MAIN/server WITHOUT/server --sizes 1,100,400 [--form columns]``; 100 and 400
# move < 0.1 %). A use stays only while that cost is >= 3 % at some size (issue #45, decision 6).
SMALL_BATCH = 8

# The batch's memo key of its memories' own features when the runtime lent a store (``core.features``).
OWN_FEATURES = "memory features"


def own_features(batch: Batch) -> Any:
    """The ``core.features.MemoryFeatures`` the pipeline looked up for this batch, None without a store (the
    signals then apply their rules themselves: the same values)."""
    return batch.memo.peek(OWN_FEATURES)


# Per candidate, a tuple of reason strings; usually a lazy ``core.reasons`` column.
Reasons = Sequence[tuple[str, ...]]


@dataclass(frozen=True)
class ScoringContext:
    """Request-level inputs the signals may read (never the clock)."""

    query: str
    reference_time: float  # epoch seconds
    explicit_lookup: bool = False
    provenance_key: bytes | None = None  # HMAC key proving privileged sources


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
