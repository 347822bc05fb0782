"""Metric declarations: families, names, and the bulk histogram observation."""

from __future__ import annotations

import numpy as np
import pytest
from prometheus_client import CollectorRegistry, Histogram, generate_latest

from memrank.metrics.declare import Metrics, observe_many
from memrank.metrics.drift import SIGNAL_BUCKETS

FAMILIES = {
    "memrank_requests": "counter",
    "memrank_rank_duration_seconds": "histogram",
    "memrank_signal_value": "histogram",
    "memrank_candidates": "counter",
    "memrank_selected": "counter",
    "memrank_dropped": "counter",
    "memrank_nothing_selected": "counter",
    "memrank_request_candidates": "histogram",
    "memrank_layer_budget_utilization_ratio": "histogram",
    "memrank_top_margin": "histogram",
    "memrank_signal_drift_psi": "gauge",
    "memrank_signal_drift_js": "gauge",
    "memrank_decision_log_records": "counter",
    "memrank_decision_log_dropped": "counter",
    "memrank_feedback_labels": "counter",
}


def test_every_family_is_declared_on_the_given_registry_only() -> None:
    registry = CollectorRegistry()
    Metrics(registry)
    declared = {m.name: m.type for m in registry.collect()}
    assert declared == FAMILIES
    Metrics(CollectorRegistry())  # a second registry: no duplicate-timeseries error, nothing global


def test_signal_buckets_fit_values_in_zero_to_one() -> None:
    assert SIGNAL_BUCKETS[0] == 0.1 and SIGNAL_BUCKETS[-1] == 1.0
    assert np.allclose(np.diff(SIGNAL_BUCKETS), 0.1)


def _exposition(values: np.ndarray, bulk: bool) -> bytes:
    registry = CollectorRegistry()
    h = Histogram("x", "x", ("k",), buckets=SIGNAL_BUCKETS, registry=registry)
    child = h.labels(k="v")
    if bulk:
        observe_many(child, values)
    else:
        for v in values:
            child.observe(float(v))
    return b"\n".join(line for line in generate_latest(registry).splitlines() if b"_created" not in line)


def _without_sum(text: bytes) -> bytes:
    return b"\n".join(line for line in text.splitlines() if not line.startswith(b"x_sum"))


def test_bulk_observation_gives_the_same_exposition_as_one_by_one() -> None:
    values = np.array([0.0, 0.1, 0.1, 0.25, 0.5, 0.99, 1.0, 1.7, -0.2, 0.3000001, 0.75])
    assert _without_sum(_exposition(values, bulk=True)) == _without_sum(_exposition(values, bulk=False))
    sums = [float(line.split()[-1]) for b in (True, False) for line in _exposition(values, b).splitlines()
            if line.startswith(b"x_sum")]
    assert sums[0] == pytest.approx(sums[1], rel=1e-12)  # summation order differs, nothing else
    text = _exposition(values, bulk=True).decode()
    assert 'x_bucket{k="v",le="0.1"} 4.0' in text  # -0.2, 0.0, 0.1, 0.1
    assert 'x_bucket{k="v",le="+Inf"} 11.0' in text


def test_bulk_observation_skips_non_finite_values() -> None:
    text = _exposition(np.array([0.5, np.nan, np.inf]), bulk=True).decode()
    assert 'x_count{k="v"} 1.0' in text
    assert 'x_sum{k="v"} 0.5' in text
