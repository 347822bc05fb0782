"""Per-(profile, signal) drift state: a reference histogram and a sliding window of recent values.

The reference is either given (loaded from a ``memrank drift snapshot`` file)
or made of the first ``reference_size`` values seen after start; the values
after it fill a ring of the last ``window_size`` values. Drift is reported
once both are full. Values are kept as bin indices, so memory is
``window_size`` int8 per key and an update costs O(values + bins).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from memrank.metrics.drift import BIN_COUNT, bin_index, js, psi

Key = tuple[str, str]  # (profile, signal)


@dataclass(frozen=True)
class DriftReading:
    """Drift of one signal under one profile."""

    psi: float
    js: float


class _State:
    def __init__(self, window_size: int, reference: np.ndarray | None) -> None:
        self.reference = np.zeros(BIN_COUNT, np.int64) if reference is None else reference.astype(np.int64)
        self.reference_fixed = reference is not None
        self.ring = np.full(window_size, -1, np.int8)
        self.pos = 0
        self.counts = np.zeros(BIN_COUNT, np.int64)

    def add(self, bins: np.ndarray, reference_size: int) -> None:
        if not self.reference_fixed:
            room = max(0, reference_size - int(self.reference.sum()))
            self.reference += np.bincount(bins[:room], minlength=BIN_COUNT)
            bins = bins[room:]
        size = self.ring.shape[0]
        bins = bins[-size:]
        idx = (self.pos + np.arange(bins.shape[0])) % size
        old = self.ring[idx]
        self.counts -= np.bincount(old[old >= 0], minlength=BIN_COUNT)
        self.ring[idx] = bins
        self.counts += np.bincount(bins, minlength=BIN_COUNT)
        self.pos = int((self.pos + bins.shape[0]) % size)

    def reading(self, reference_size: int) -> DriftReading | None:
        ref_full = self.reference_fixed or int(self.reference.sum()) >= reference_size
        if not ref_full or int(self.counts.sum()) < self.ring.shape[0]:
            return None
        return DriftReading(psi(self.reference, self.counts), js(self.reference, self.counts))


class DriftTracker:
    """Sliding-window drift of each (profile, signal) against its reference. Thread-safe."""

    def __init__(self, window_size: int, reference_size: int,
                 references: Mapping[Key, np.ndarray] | None = None) -> None:
        if window_size < 1 or reference_size < 1:
            raise ValueError("window_size and reference_size must be at least 1")
        self.window_size = window_size
        self.reference_size = reference_size
        self._given = dict(references or {})
        self._states: dict[Key, _State] = {}
        self._lock = threading.Lock()

    def update(self, profile: str, signal: str, values: np.ndarray) -> DriftReading | None:
        """Add values (NaN ignored) and return the drift, or None until reference and window are full."""
        values = np.asarray(values, dtype=np.float64)
        return self.update_bins(profile, signal, bin_index(values[~np.isnan(values)]))

    def update_bins(self, profile: str, signal: str, bins: np.ndarray) -> DriftReading | None:
        """``update`` for values already binned with ``bin_index`` (NaN left out)."""
        self.add_bins(profile, signal, bins)
        return self.reading(profile, signal)

    def add_bins(self, profile: str, signal: str, bins: np.ndarray) -> None:
        """Add values already binned with ``bin_index`` (NaN left out), without computing the drift."""
        key = (profile, signal)
        with self._lock:
            state = self._states.get(key)
            if state is None:
                state = self._states[key] = _State(self.window_size, self._given.get(key))
            state.add(bins, self.reference_size)

    def reading(self, profile: str, signal: str) -> DriftReading | None:
        """The drift of a key now, or None until its reference and window are full (or it was never seen)."""
        with self._lock:
            state = self._states.get((profile, signal))
            return None if state is None else state.reading(self.reference_size)

    def reference(self, profile: str, signal: str) -> np.ndarray | None:
        """The reference counts of a key so far (None if never seen)."""
        with self._lock:
            state = self._states.get((profile, signal))
            return None if state is None else state.reference.copy()
