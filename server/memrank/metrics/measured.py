"""What the signal metrics and the drift reference measure: the raw signals of the candidates past the gates.

One definition for both readers, ``metrics.recorder`` (live histograms and drift windows) and
``metrics.reference`` (reference files built offline), so a reference and the window it is compared
with count the same candidates.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from memrank.core.explain.outcome import RankOutcome


def drift_population(outcome: RankOutcome) -> np.ndarray:
    """The candidates whose signals are measured: those that passed the gates (bool mask)."""
    return np.asarray(outcome.scores.gate == 0)


def raw_signals(outcome: RankOutcome) -> Iterator[tuple[str, np.ndarray]]:
    """(signal name, raw values of the measured candidates), for the drift reference and window."""
    mask = drift_population(outcome)
    for column in outcome.scores.signals:
        yield column.name, np.asarray(column.raw, dtype=np.float64)[mask]
