"""``memrank_signal_value``: a histogram the recorder fills a call at a time, exported by a custom collector.

prometheus_client's ``Histogram.observe`` takes one value; a 400-candidate call has 8,000 (10 signals x 2 forms),
and observed one by one they cost about as much as the call itself (in a supervisor's worker, whose metric
objects write a file per value: 70.7 M instructions a call against 3.25 M). Its public route for counts added in
bulk is a collector (``registry.register``, ``collect`` yielding a ``HistogramMetricFamily``): the recorder adds
a call's bucket counts and sums to a ``Table`` with one numpy addition, and a scrape turns the rows into the
samples the Histogram would expose: cumulative buckets with the same ``le`` bounds, ``_count``, ``_sum`` and,
in one process, ``_created``.

A supervisor's worker keeps its table in a file in the supervisor's metrics directory; the supervisor's
``WorkersSignalValues`` sums every worker's file (a dead worker's too, as prometheus_client's multiprocess
files are summed), and like prometheus_client's multiprocess collector exposes no ``_created``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

import numpy as np
from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import HistogramMetricFamily, Metric
from prometheus_client.utils import floatToGoString

from memrank.metrics.drift import BIN_COUNT, SIGNAL_BUCKETS
from memrank.metrics.table import Key, Table, read_tables

NAME = "memrank_signal_value"
DOC = "Signal values of the candidates that passed the gates, raw and normalized."
LABELS = ("signal", "form", "profile", "layer")
FORMS = ("raw", "normalized")
WIDTH = BIN_COUNT + 1  # a row: the (non-cumulative) bucket counts, then the sum of the values
BUCKETS = SIGNAL_BUCKETS
_LE = [floatToGoString(b) for b in (*SIGNAL_BUCKETS, float("inf"))]  # type: ignore[no-untyped-call]

# (profile, layer labels, signal names): one call's series; its counts are (signals x forms, layers, buckets).
Series = tuple[str, tuple[str, ...], tuple[str, ...]]


def series_keys(series: Series) -> list[Key]:
    """The (signal, form, profile, layer) label values of a series' cells, in the order of its arrays."""
    profile, layers, signals = series
    return [(signal, form, profile, layer) for signal in signals for form in FORMS for layer in layers]


class SignalValues:
    """The signal histogram's counts and sums, added a call at a time and exported at a scrape.

    ``directory``: a supervisor's worker; the table lives in a file there, read by ``WorkersSignalValues``."""

    def __init__(self, registry: CollectorRegistry, directory: str | None = None) -> None:
        self._lock = threading.Lock()  # calls on several handler threads: no addition lost
        self._table = Table(WIDTH, directory, NAME)
        self._rows: dict[Series, np.ndarray] = {}
        self._created: list[float] = []  # each row's first-seen time
        registry.register(self)

    def add(self, series: Series, counts: np.ndarray, sums: np.ndarray) -> None:
        """Add one call's bucket counts (cells, ..., buckets) and value sums (cells, ...) to a series' rows."""
        amounts = np.concatenate((counts.reshape(-1, BIN_COUNT), sums.reshape(-1, 1)), axis=1)
        with self._lock:
            rows = self._rows.get(series)
            if rows is None:
                rows = self._rows[series] = self._table.rows(series_keys(series))
                self._created.extend([time.time()] * (len(self._table.keys) - len(self._created)))
            self._table.add(rows, amounts)

    def describe(self) -> Iterable[Metric]:
        """The family, without samples."""
        return [HistogramMetricFamily(NAME, DOC, labels=LABELS)]

    def collect(self) -> Iterable[Metric]:
        """One histogram family: per label set, cumulative buckets, count, sum and created."""
        with self._lock:
            keys, values, created = list(self._table.keys), self._table.values.copy(), list(self._created)
        family = family_of(zip(keys, values, strict=True))
        for key, when in zip(keys, created, strict=True):
            family.add_sample(f"{NAME}_created", dict(zip(LABELS, key, strict=True)), when)
        return [family]


class WorkersSignalValues:
    """The supervisor's ``memrank_signal_value``: every worker's table in ``directory``, summed by label set."""

    def __init__(self, registry: CollectorRegistry, directory: str) -> None:
        self._directory = directory
        registry.register(self)

    def describe(self) -> Iterable[Metric]:
        """The family, without samples."""
        return [HistogramMetricFamily(NAME, DOC, labels=LABELS)]

    def collect(self) -> Iterable[Metric]:
        """One histogram family: per label set, the workers' buckets, count and sum added up."""
        merged: dict[Key, np.ndarray] = {}
        for key, row in read_tables(self._directory, NAME, WIDTH):
            held = merged.get(key)
            merged[key] = row.copy() if held is None else held + row
        return [family_of(merged.items())]


def family_of(rows: Iterable[tuple[Key, np.ndarray]]) -> HistogramMetricFamily:
    """The histogram family of (label key, row) pairs: cumulative buckets, count and sum per label set."""
    family = HistogramMetricFamily(NAME, DOC, labels=LABELS)
    for key, row in rows:
        cumulative = np.cumsum(row[:BIN_COUNT]).tolist()
        family.add_metric(list(key), list(zip(_LE, cumulative, strict=True)), float(row[BIN_COUNT]))
    return family
