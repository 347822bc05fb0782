"""``memrank_signal_value`` as a custom collector: the recorder adds each call's bucket counts and sums per
series (one array addition), a scrape turns them into histogram samples (``HistogramMetricFamily``).

prometheus_client's ``Histogram.observe`` takes one value at a time: 8,000 calls for the 10 signals x 2 forms of
a 400-candidate request, about as many instructions as the request itself (83 M against 82 M, valgrind). Its
public route for counts added in bulk is a collector, this one. The samples are the ones the Histogram would
expose (cumulative buckets, count, sum, created), series in the order first seen.

A supervisor's workers cannot use it: the supervisor reads their metrics from prometheus_client's multiprocess
files, which only its own metric objects write. There, ``Metrics(per_value=True)`` declares the Histogram and
the recorder observes each value.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence

import numpy as np
from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import HistogramMetricFamily, Metric
from prometheus_client.utils import floatToGoString

from memrank.metrics.drift import BIN_COUNT, SIGNAL_BUCKETS

NAME = "memrank_signal_value"
DOC = "Signal values of the candidates that passed the gates, raw and normalized."
LABELS = ("signal", "form", "profile", "layer")
FORMS = ("raw", "normalized")
_LE = [floatToGoString(b) for b in (*SIGNAL_BUCKETS, float("inf"))]  # type: ignore[no-untyped-call]

# (profile, layer labels, signal names): one call's series; its counts are (signals x forms, layers, buckets).
Series = tuple[str, tuple[str, ...], tuple[str, ...]]


def series_keys(series: Series) -> list[tuple[str, str, str, str]]:
    """The (signal, form, profile, layer) label values of a series' rows, in the order of its arrays."""
    profile, layers, signals = series
    return [(signal, form, profile, layer) for signal in signals for form in FORMS for layer in layers]


class SignalValues:
    """The signal histograms' counts and sums, kept here and exported at a scrape (see the module docstring)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._lock = threading.Lock()
        self._series: dict[Series, tuple[np.ndarray, np.ndarray]] = {}
        self._created: dict[tuple[str, str, str, str], float] = {}  # each label set: when first seen
        registry.register(self)

    def add(self, series: Series, counts: np.ndarray, sums: np.ndarray) -> None:
        """Add one call's bucket counts (rows, layers, buckets) and value sums (rows, layers) to a series."""
        with self._lock:
            held = self._series.get(series)
            if held is None:
                self._series[series] = (counts.copy(), sums.copy())
                now = time.time()
                for key in series_keys(series):
                    self._created.setdefault(key, now)
            else:
                held[0][...] += counts
                held[1][...] += sums

    def describe(self) -> Iterable[Metric]:
        """The family, without samples."""
        return [HistogramMetricFamily(NAME, DOC, labels=LABELS)]

    def collect(self) -> Iterable[Metric]:
        """One histogram family: per label set, cumulative buckets, count, sum and created."""
        with self._lock:
            held = [(series, counts.copy(), sums.copy()) for series, (counts, sums) in self._series.items()]
            created = dict(self._created)
        merged: dict[tuple[str, str, str, str], tuple[np.ndarray, float]] = {}
        for series, counts, sums in held:
            for key, cell, total in zip(series_keys(series), counts.reshape(-1, BIN_COUNT), sums.reshape(-1).tolist(),
                                        strict=True):
                was = merged.get(key)
                merged[key] = (cell, total) if was is None else (was[0] + cell, was[1] + total)
        family = HistogramMetricFamily(NAME, DOC, labels=LABELS)
        for key, (cell, total) in merged.items():
            family.add_metric(list(key), _buckets(np.cumsum(cell).tolist()), total)
            family.add_sample(f"{NAME}_created", dict(zip(LABELS, key, strict=True)), created[key])
        return [family]


def _buckets(cumulative: Sequence[int]) -> list[tuple[str, float]]:
    return [(le, float(c)) for le, c in zip(_LE, cumulative, strict=True)]
