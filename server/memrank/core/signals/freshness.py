"""Freshness: valid at the reference time, and not too old.

    age       = max(0, reference_time - created_at) in hours (ingested_at when created_at is unset)
    freshness = 0                                 outside [valid_from, valid_to) at the reference time
              = max(0.1, 0.5 ** (age / 720))      otherwise (half-life 30 days, floor 0.1)
              = 0.1                               when neither time is set (the floor)

So reference_time is an as-of time: a memory not yet valid, or expired, is
not fresh (the temporal gates also drop it on recall).
"""

from __future__ import annotations

import numpy as np

from memrank.core.batch import Batch
from memrank.core.profile import Profile
from memrank.core.signals.base import RawSignal, ScoringContext
from memrank.core.signals.recency import hours_since

HALF_LIFE_HOURS = 720.0
FLOOR = 0.1


def valid_at(batch: Batch, reference_time: float) -> np.ndarray:
    """True where valid_from <= reference_time < valid_to (unset bounds are open)."""
    started = np.isnan(batch.valid_from) | (batch.valid_from <= reference_time)
    ongoing = np.isnan(batch.valid_to) | (reference_time < batch.valid_to)
    return np.asarray(started & ongoing)


def freshness(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """0 outside validity, else max(0.1, 0.5 ** (age_hours / 720))."""
    t = np.where(np.isnan(batch.created_at), batch.ingested_at, batch.created_at)
    age = hours_since(ctx.reference_time, t)
    unset = np.isnan(age)
    decayed = np.maximum(FLOOR, np.power(0.5, np.where(unset, 0.0, age) / HALF_LIFE_HOURS))
    valid = valid_at(batch, ctx.reference_time)
    values = np.where(valid, np.where(unset, FLOOR, decayed), 0.0)
    reasons = tuple(
        ("not valid at the reference time: 0",) if not ok
        else ("no created_at or ingested_at: floor 0.1",) if no_t
        else (f"age {a:.1f} h, half-life {HALF_LIFE_HOURS:g} h",)
        for ok, no_t, a in zip(valid.tolist(), unset.tolist(), age.tolist(), strict=True)
    )
    return RawSignal(values, reasons)
