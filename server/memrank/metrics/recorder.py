"""Records one ranking outcome into the metrics, at the edge, from the numbers the core returned."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Any

import numpy as np

from memrank.config import Settings
from memrank.core.explain.outcome import RankOutcome
from memrank.core.types import DropReason
from memrank.metrics.declare import Metrics
from memrank.metrics.drift import BIN_COUNT, fast_bin_index
from memrank.metrics.measured import drift_population
from memrank.metrics.reference import load_reference
from memrank.metrics.signal_values import FORMS
from memrank.metrics.window import DriftTracker

log = logging.getLogger("memrank.metrics")
OTHER = "other"
_REASONS = {reason.value: reason.name.lower() for reason in DropReason}  # the ``reason`` label of a drop code


class Recorder:
    """Turns RankOutcomes into metric updates; labels bounded by the configuration."""

    def __init__(self, metrics: Metrics, profiles: Iterable[str], layers: Iterable[str],
                 drift: DriftTracker | None = None) -> None:
        self.metrics = metrics
        self.profiles = frozenset(profiles)
        self.layers = frozenset(layers) | {OTHER}
        self.drift = drift
        # True: the drift gauges are brought up to date when ``publish`` is called (a scrape, see FlushFirst), not
        # after every call: PSI and JS of an unchanged window are computed once, not once per request.
        self.publish_on_scrape = False
        self._stale: set[tuple[str, str]] = set()
        self._stale_lock = threading.Lock()
        self._children: dict[tuple[Any, tuple[str, ...]], Any] = {}  # the families' children (``_child``)

    def record(self, outcome: RankOutcome) -> None:
        """Record one Rank outcome; never raises (metrics must not fail a call)."""
        try:
            self._record(outcome)
        except Exception:
            log.exception("recording metrics failed")

    def _profile(self, outcome: RankOutcome) -> str:
        return outcome.profile.name if outcome.profile.name in self.profiles else OTHER

    def _layer(self, name: str) -> str:
        return name if name in self.layers else OTHER

    def _child(self, family: Any, *labels: str) -> Any:
        """``family.labels(*labels)``, kept: labels() costs more than the update, and is never undone here."""
        child = self._children.get((family, labels))
        if child is None:
            child = self._children.setdefault((family, labels), family.labels(*labels))
        return child

    def _record(self, outcome: RankOutcome) -> None:
        profile = self._profile(outcome)
        self.metrics.request_candidates.observe(outcome.n)
        values, bins = self._binned(outcome)
        # Which values count: finite ones (histograms) or non-NaN raw ones (drift) of measured candidates. None:
        # every value counts (no gated candidate, no NaN, no infinity), the common case, with no masking at all.
        measured = drift_population(outcome)
        finite = np.isfinite(values)
        counted = None if finite.all() and measured.all() else finite & measured
        self._record_layers(outcome, profile, values, bins, counted)
        self._record_drops(outcome)
        self._record_selection(outcome, profile)
        self._record_budgets(outcome)
        self._record_shadow(outcome, profile)
        self._record_drift(outcome, profile, values, bins, measured if counted is not None else None)

    def _record_layers(self, outcome: RankOutcome, profile: str, values: np.ndarray, bins: np.ndarray,
                       counted: np.ndarray | None) -> None:
        """Candidates, selections and signal values, per (bounded) layer: a few numpy passes per call.

        Every signal, raw and normalized, is binned in one pass over a (2 x signals, n) matrix and counted
        per (row, layer, bucket) in one bincount, then added to the signal histogram's rows in one numpy
        addition (``SignalValues.add``), whatever the batch size. ``counted``: the values that count (None: all).
        """
        n = outcome.n
        present = set(outcome.layer_of)
        labels = sorted({self._layer(name) for name in present})
        width = len(labels)
        if width == 1:
            layer = np.zeros(n, np.int64)
            received = [n]
            picked = [int(np.count_nonzero(outcome.drop == 0))]
        else:
            slot = {name: labels.index(self._layer(name)) for name in present}
            layer = np.fromiter(map(slot.__getitem__, outcome.layer_of), dtype=np.int64, count=n)
            received = np.bincount(layer, minlength=width).tolist()
            picked = np.bincount(layer[outcome.drop == 0], minlength=width).tolist()
        for j, name in enumerate(labels):
            self._child(self.metrics.candidates, profile, name).inc(received[j])
            self._child(self.metrics.selected, profile, name).inc(picked[j])
        columns = outcome.scores.signals
        if not values.size:
            return
        rows = len(columns) * len(FORMS)
        nbins = BIN_COUNT
        cell = np.arange(0, rows * width, width)[:, None] + layer
        if counted is None:
            cell, bins, values = cell.ravel(), bins.ravel(), values.ravel()
        else:
            cell, bins, values = cell[counted], bins[counted], values[counted]
        counts = np.bincount(cell * nbins + bins, minlength=rows * width * nbins).reshape(rows, width, nbins)
        sums = np.bincount(cell, weights=values, minlength=rows * width).reshape(rows, width)
        self.metrics.signal_value.add((profile, tuple(labels), tuple(c.name for c in columns)), counts, sums)

    @staticmethod
    def _binned(outcome: RankOutcome) -> tuple[np.ndarray, np.ndarray]:
        """(values, bucket index) of every signal: rows raw_1, normalized_1, raw_2, ...

        The bucket of a finite or infinite value is where Prometheus places it (``drift.bin_index``); a NaN's
        is meaningless (never read: NaN values are left out of the histograms and the drift windows)."""
        signals = outcome.scores.signals
        values = np.empty((len(signals) * len(FORMS), outcome.n))
        if not signals:
            return values, values.astype(np.int8)
        values[0::2] = [column.raw for column in signals]
        values[1::2] = [column.normalized for column in signals]
        return values, fast_bin_index(values)

    def _record_selection(self, outcome: RankOutcome, profile: str) -> None:
        """Empty answers and the winner's margin."""
        picked = outcome.ranked.shape[0]
        if outcome.n and picked == 0:
            self.metrics.nothing_selected.labels(profile=profile).inc()
        if picked >= 2:
            first, second = outcome.final[outcome.ranked[:2]]
            self.metrics.top_margin.observe(max(0.0, float(first - second)))

    def _record_shadow(self, outcome: RankOutcome, profile: str) -> None:
        """The served and the shadow selection's agreement: overlap@k, and Kendall tau when it is defined."""
        shadow = outcome.shadow
        if shadow is None:
            return
        other = shadow.profile if shadow.profile in self.profiles else OTHER
        self._child(self.metrics.shadow_overlap, profile, other).observe(shadow.overlap_at_k)
        if shadow.common >= 2:
            self._child(self.metrics.shadow_kendall_tau, profile, other).observe(shadow.kendall_tau)

    def _record_budgets(self, outcome: RankOutcome) -> None:
        """Used / budget tokens of each layer that had a budget (0 = no token budget)."""
        for alloc in outcome.allocations:
            if alloc.budget_tokens > 0:
                ratio = alloc.used_tokens / alloc.budget_tokens
                self._child(self.metrics.layer_utilization, self._layer(alloc.layer)).observe(ratio)

    def _record_drops(self, outcome: RankOutcome) -> None:
        for value, count in enumerate(np.bincount(outcome.drop).tolist()):
            if count and value:
                self._child(self.metrics.dropped, _REASONS[value]).inc(count)

    def _record_drift(self, outcome: RankOutcome, profile: str, values: np.ndarray, bins: np.ndarray,
                      measured: np.ndarray | None) -> None:
        """Each signal's raw buckets into its drift window: those of the measured candidates whose raw value is not
        NaN (``measured`` None: every candidate is measured and no value is NaN)."""
        if self.drift is None or not values.size:
            return
        raw = bins[0::2]
        if measured is None:
            rows = list(raw)
        else:
            kept = measured & ~np.isnan(values[0::2])
            rows = [row[mask] for row, mask in zip(raw, kept, strict=True)]
        names = [column.name for column in outcome.scores.signals]
        self.drift.add_rows(profile, names, rows)
        if self.publish_on_scrape:
            with self._stale_lock:
                self._stale.update((profile, name) for name in names)
        else:
            for name in names:
                self._set_drift(profile, name)

    def publish(self) -> None:
        """Set the drift gauges of every (profile, signal) updated since the last call."""
        with self._stale_lock:
            stale, self._stale = self._stale, set()
        for profile, signal in sorted(stale):
            self._set_drift(profile, signal)

    def _set_drift(self, profile: str, signal: str) -> None:
        reading = self.drift.reading(profile, signal) if self.drift is not None else None
        if reading is not None:
            self.metrics.drift_psi.labels(signal=signal, profile=profile).set(reading.psi)
            self.metrics.drift_js.labels(signal=signal, profile=profile).set(reading.js)


def build_recorder(metrics: Metrics, settings: Settings) -> Recorder:
    """The recorder for a server: labels bounded by ``settings``, drift per ``settings.drift``."""
    d = settings.drift
    references = load_reference(d.reference_file) if d.reference_file else None
    tracker = DriftTracker(d.window_size, d.reference_size, references)
    return Recorder(metrics, settings.profiles, (layer.name for layer in settings.layers), tracker)
