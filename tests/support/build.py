"""Small builders shared by the core unit tests."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from memrank.core.batch import Batch, CandidateInput, batch_from_rows
from memrank.core.profile import Profile
from memrank.core.signals.base import RawSignal, ScoringContext
from memrank.profiles.builtin import BUILTIN_PROFILES

REF = 1_700_000_000.0  # reference time of every test, epoch seconds
HOUR = 3600.0


def batch(*rows: dict[str, Any]) -> Batch:
    """A batch from keyword dicts; ids default to c0, c1, ..."""
    return batch_from_rows([CandidateInput(**{"id": f"c{i}", **r}) for i, r in enumerate(rows)])


def ctx(query: str = "", **kw: Any) -> ScoringContext:
    """A scoring context at REF."""
    return ScoringContext(query=query, reference_time=kw.pop("reference_time", REF), **kw)


def profile(name: str = "default", **changes: Any) -> Profile:
    """A built-in profile, optionally with fields replaced."""
    return replace(BUILTIN_PROFILES[name], **changes)


def everyone(b: Batch) -> np.ndarray:
    """A population mask holding every candidate."""
    return np.ones(b.n, dtype=bool)


def run(fn: Any, b: Batch, c: ScoringContext | None = None, p: Profile | None = None,
        population: np.ndarray | None = None) -> RawSignal:
    """Call a signal function with defaults for what the test does not care about."""
    result: RawSignal = fn(b, c or ctx(), p or profile(), everyone(b) if population is None else population)
    return result
