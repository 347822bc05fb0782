"""What scoring returns: per-signal columns, the combined score and the gates."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SignalColumn:
    """One signal over the batch, before and after normalisation."""

    name: str
    weight: float  # effective weight: contribution = weight * normalized
    normalization: str
    raw: np.ndarray  # float64 (n,)
    normalized: np.ndarray  # float64 (n,), in [0, 1] except for "none" on unbounded signals
    contribution: np.ndarray  # float64 (n,)
    reasons: Sequence[tuple[str, ...]]  # per candidate (formatted when read: core.reasons)


@dataclass(frozen=True)
class Scores:
    """Scores of a batch under one profile.

    Invariant: combined == sum(c.contribution for c in signals) + blend_term,
    elementwise. ``gate`` holds a DropReason value per candidate (0 = eligible);
    gated candidates are excluded from normalisation populations.
    """

    signals: tuple[SignalColumn, ...]
    combined: np.ndarray  # float64 (n,)
    blend_term: np.ndarray  # float64 (n,)
    quality: np.ndarray  # float64 (n,), 0 where the profile has no quality part
    gate: np.ndarray  # int8 (n,), DropReason values
    gate_reasons: Sequence[tuple[str, ...]]  # per candidate, why it was gated (empty if not)
    # Effective importance in [0, 1] (float64) of the given candidates. A profile that neither weighs nor
    # gates on importance computes it only for the candidates asked about (the selected ones).
    importance_of: Callable[[np.ndarray], np.ndarray]

    @property
    def n(self) -> int:
        """Number of candidates."""
        return int(self.combined.shape[0])

    @property
    def importance(self) -> np.ndarray:
        """Effective importance of every candidate, float64 (n,)."""
        return self.importance_of(np.arange(self.n))
