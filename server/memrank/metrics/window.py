"""Per-(profile, signal) drift state: a reference histogram and a sliding window of recent values.

The reference is either given (loaded from a ``memrank drift snapshot`` file)
or made of the first ``reference_size`` values seen after start; the values
after it fill a ring of the last ``window_size`` values. Drift is reported
once both are full. Values are kept as bin indices, so memory is
``window_size`` int8 per key and an update costs O(values + bins).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from memrank.metrics.drift import BIN_COUNT, PSI_FLOOR, bin_index, js_of_shares, psi_of_shares, shares

Key = tuple[str, str]  # (profile, signal)


@dataclass(frozen=True)
class DriftReading:
    """Drift of one signal under one profile."""

    psi: float
    js: float


class _State:
    """One key's reference and ring. ``room`` (reference values still to take) and ``filled`` (every ring slot
    written once) are kept as Python values, so a call that adds values to a full reference and a full ring costs
    two bincounts and a slice assignment, not a pass over the reference or a mask of the ring. The reading is
    kept until the counts change: values replaced by values of the same bins (a constant signal) cost no PSI and
    no JS again, which a server recording inline (workers of a supervisor) asks for after every call."""

    def __init__(self, window_size: int, reference_size: int, reference: np.ndarray | None) -> None:
        self.reference = np.zeros(BIN_COUNT, np.int64) if reference is None else reference.astype(np.int64)
        self.reference_fixed = reference is not None
        self.room = 0 if self.reference_fixed else reference_size  # = reference_size - reference.sum()
        self.ring = np.full(window_size, -1, np.int8)
        self.pos = 0
        self.filled = False  # until then the slots from pos on are unwritten (-1): nothing leaves the window
        self.counts = np.zeros(BIN_COUNT, np.int64)
        self.last: DriftReading | None = None  # the reading of the reference and counts as they are, once made
        self.reference_shares: tuple[np.ndarray, np.ndarray] | None = None  # (shares, floored), once full

    def add(self, bins: np.ndarray) -> None:
        if self.room:
            taken = bins[:self.room]
            self.reference += np.bincount(taken, minlength=BIN_COUNT)
            self.room -= taken.shape[0]
            bins = bins[taken.shape[0]:]
            self.last = self.reference_shares = None
        if not bins.shape[0]:
            return
        size = self.ring.shape[0]
        if bins.shape[0] > size:
            bins = bins[-size:]
        end = self.pos + bins.shape[0]
        if end <= size:
            self._put(self.pos, bins)
        else:  # wraps: the tail of the ring, then its head
            self._put(self.pos, bins[:size - self.pos])
            self._put(0, bins[size - self.pos:])
        if end >= size:
            self.filled = True
        self.pos = end % size

    def _put(self, start: int, bins: np.ndarray) -> None:
        """Write ``bins`` into the ring from ``start`` (no wrap), moving the counts of what they replace."""
        end = start + bins.shape[0]
        change = np.bincount(bins, minlength=BIN_COUNT)
        if self.filled or start < self.pos:  # slots before pos were written; before the first wrap none after it
            change -= np.bincount(self.ring[start:end], minlength=BIN_COUNT)
        self.ring[start:end] = bins
        if change.any():
            self.counts += change
            self.last = None

    def reading(self) -> DriftReading | None:
        if self.room or not self.filled:
            return None
        if self.last is None:
            if self.reference_shares is None:  # the reference no longer changes: its shares are made once
                p = shares(self.reference)
                self.reference_shares = p, np.maximum(p, PSI_FLOOR)
            (p, floored), q = self.reference_shares, shares(self.counts)
            self.last = DriftReading(psi_of_shares(floored, q), js_of_shares(p, q))
        return self.last


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
                state = self._states[key] = _State(self.window_size, self.reference_size, self._given.get(key))
            state.add(bins)

    def add_rows(self, profile: str, signals: Sequence[str], rows: Sequence[np.ndarray]) -> None:
        """``add_bins`` of several signals of one profile at once (one lock)."""
        with self._lock:
            for signal, bins in zip(signals, rows, strict=True):
                state = self._states.get((profile, signal))
                if state is None:
                    state = self._states[profile, signal] = _State(self.window_size, self.reference_size,
                                                                   self._given.get((profile, signal)))
                state.add(bins)

    def reading(self, profile: str, signal: str) -> DriftReading | None:
        """The drift of a key now, or None until its reference and window are full (or it was never seen)."""
        with self._lock:
            state = self._states.get((profile, signal))
            return None if state is None else state.reading()

    def reference(self, profile: str, signal: str) -> np.ndarray | None:
        """The reference counts of a key so far (None if never seen)."""
        with self._lock:
            state = self._states.get((profile, signal))
            return None if state is None else state.reference.copy()
