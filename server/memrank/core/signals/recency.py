"""Recency: decay ** hours since the memory was last used, never below a floor.

    t       = last_accessed_at, or created_at when unset
    hours   = max(0, (reference_time - t) / 3600)   # the future is 0 h, never a bonus
    recency = max(floor, decay_per_hour ** hours)     # floor when t is unset

``profile.recency`` holds the rate (0.995/h by default, half-life
ln 0.5 / ln 0.995 ~ 138.3 h; ``RecencySpec.from_half_life`` converts a
half-life) and the floor (0.05 by default, so an old but relevant memory
stays reachable; 0 in the generative-agents compatibility profile).
"""

from __future__ import annotations

import numpy as np

from memrank.core.batch import Batch
from memrank.core.profile import Profile
from memrank.core.reasons import Lazy
from memrank.core.signals.base import RawSignal, ScoringContext

SECONDS_PER_HOUR = 3600.0


def hours_since(reference_time: float, times: np.ndarray) -> np.ndarray:
    """Hours from each time to the reference time, 0 for future times, NaN where unset."""
    return np.maximum(0.0, (reference_time - times) / SECONDS_PER_HOUR)


def recency(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """max(floor, decay ** hours since last access, falling back to creation)."""
    spec = profile.recency
    accessed = ~np.isnan(batch.last_accessed_at)
    t = np.where(accessed, batch.last_accessed_at, batch.created_at)
    hours = hours_since(ctx.reference_time, t)
    unset = np.isnan(hours)
    decayed = np.power(spec.decay_per_hour, np.where(unset, 0.0, hours))
    values = np.where(unset, spec.floor, np.maximum(spec.floor, decayed))
    def why(i: int) -> tuple[str, ...]:
        return _reason(float(hours[i]), bool(accessed[i]), float(decayed[i]), spec.decay_per_hour, spec.floor)

    return RawSignal(values, Lazy(batch.n, why))


def _reason(hours: float, accessed: bool, decayed: float, rate: float, floor: float) -> tuple[str, ...]:
    if hours != hours:  # NaN: neither time set
        return (f"no last_accessed_at or created_at: floor {floor:g}",)
    field = "last_accessed_at" if accessed else "created_at"
    text = f"{rate:g}^{hours:.2f} h since {field}"
    return (text, f"floor {floor:g} applied") if decayed < floor else (text,)
