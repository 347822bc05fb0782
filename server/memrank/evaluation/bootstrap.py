"""Paired bootstrap of a metric's difference between two methods over the same questions.

For per-question values ``a`` and ``b`` (same questions, same order), the
difference of means is ``mean(a - b)``; its 95% interval is the 2.5th and
97.5th percentiles of ``mean((a - b)[s])`` over ``resamples`` resamples ``s``
of the questions drawn with replacement (numpy's ``default_rng(seed)``, so
the interval is the same on every run). Pairing keeps each question's
difficulty out of the interval: only how the two methods differ on it counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

RESAMPLES = 2000
SEED = 20261202


@dataclass(frozen=True)
class Paired:
    """mean(a - b) with its 95% paired-bootstrap interval."""

    delta: float
    low: float
    high: float

    @property
    def significant(self) -> bool:
        """True when the interval excludes 0."""
        return self.low > 0.0 or self.high < 0.0

    def as_dict(self) -> dict[str, float | bool]:
        """Rounded to 4 decimals, for the report."""
        return {"delta": round(self.delta, 4), "ci95": [round(self.low, 4), round(self.high, 4)],  # type: ignore
                "significant": self.significant}


def paired(a: Sequence[float], b: Sequence[float], resamples: int = RESAMPLES, seed: int = SEED) -> Paired:
    """mean(a - b) and its 95% paired-bootstrap interval (0, 0, 0 for no questions)."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if d.shape[0] == 0:
        return Paired(0.0, 0.0, 0.0)
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    for k in range(resamples):  # one resample at a time keeps memory flat for any number of questions
        means[k] = d[rng.integers(0, d.shape[0], d.shape[0])].mean()
    low, high = np.percentile(means, [2.5, 97.5])
    return Paired(float(d.mean()), float(low), float(high))
