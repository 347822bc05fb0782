"""Metric declarations: families and names; the recorder's bulk histogram updates against observe()."""

from __future__ import annotations

import math

import numpy as np
import pytest
from google.protobuf import json_format
from prometheus_client import CollectorRegistry, Histogram

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.convert import request_to_domain
from memrank.config import load_settings
from memrank.core.explain.outcome import RankOutcome
from memrank.core.pipeline import rank
from memrank.metrics.declare import Metrics
from memrank.metrics.drift import SIGNAL_BUCKETS
from memrank.metrics.recorder import build_recorder
from tests.unit.metrics.test_recorder import SIGNAL_BOUNDS

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
    "memrank_decision_log_write_failures": "counter",
    "memrank_feedback_labels": "counter",
    "memrank_config_reloads": "counter",
    "memrank_policy_info": "gauge",
    "memrank_send_timeouts": "counter",
    "memrank_feature_memo_hits": "counter",
    "memrank_feature_memo_misses": "counter",
    "memrank_unsent_refusals": "counter",
    "memrank_shadow_overlap_at_k": "histogram",
    "memrank_shadow_kendall_tau": "histogram",
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


def _signal_lines(registry: CollectorRegistry) -> dict[str, float]:
    """memrank_signal_value's bucket and count samples (the sums compared apart: summation order differs)."""
    return {f"{s.name}{sorted(s.labels.items())}": s.value for family in registry.collect()
            for s in family.samples if s.name.startswith("memrank_signal_value") and not s.name.endswith("_created")}


def _one_by_one(outcomes: list[RankOutcome]) -> CollectorRegistry:
    """The same histogram fed with prometheus_client's own observe(), one value at a time."""
    registry = CollectorRegistry()
    h = Histogram("memrank_signal_value", "x", ("signal", "form", "profile", "layer"), buckets=SIGNAL_BOUNDS,
                  registry=registry)
    for o in outcomes:
        for column in o.scores.signals:
            for form, values in (("raw", column.raw), ("normalized", column.normalized)):
                for i in range(o.n):
                    # measured: candidates the gates kept, finite values; layers without a policy count as "other"
                    if o.scores.gate[i] == 0 and math.isfinite(values[i]):
                        layer = o.layer_of[i] if o.layer_of[i] in LAYERS else "other"
                        h.labels(column.name, form, o.profile.name, layer).observe(float(values[i]))
    return registry


@pytest.mark.parametrize("on_scrape", [False, True], ids=["inline", "published-on-scrape"])
def test_the_recorder_fills_signal_histograms_as_observe_would(on_scrape: bool) -> None:
    settings = load_settings(env={})
    registry = CollectorRegistry()
    recorder = build_recorder(Metrics(registry), settings)
    recorder.publish_on_scrape = on_scrape
    values = [0.0, 0.1, 0.1, 0.25, 0.5, 0.99, 1.0, 0.3000001, 0.75]  # on and between the bucket bounds
    outcomes = [_outcome(values), _outcome(values[::-1], unsafe=True), _outcome([0.5, 0.2])]
    for o in outcomes:
        recorder.record(o)
    if on_scrape:
        recorder.publish()
    got, want = _signal_lines(registry), _signal_lines(_one_by_one(outcomes))
    sums = {k for k in want if "_sum" in k}
    assert {k: v for k, v in got.items() if k not in sums} == {k: v for k, v in want.items() if k not in sums}
    assert len(want) > 100  # many series and buckets, not a vacuous comparison
    for k in sums:
        assert got[k] == pytest.approx(want[k], rel=1e-12, abs=1e-15), k


LAYERS = ("session", "durable")


def _outcome(scores: list[float], unsafe: bool = False) -> RankOutcome:
    rows = [{"id": f"m{i}", "content": f"memory {i} about tea", "retrievalScore": s, "importance": 0.5,
             "layer": ("session", "durable", "from-the-caller")[i % 3]} for i, s in enumerate(scores)]
    if unsafe:  # a gated candidate: not measured
        rows.append({"id": "bad", "safety": "SAFETY_STATUS_UNSAFE", "retrievalScore": 0.9, "layer": "session"})
    body = {"query": "tea", "referenceTime": "2026-06-01T12:00:00Z", "candidates": rows}
    settings = load_settings(env={})
    assert {layer.name for layer in settings.layers} >= set(LAYERS)
    batch, params = request_to_domain(json_format.ParseDict(body, pb.RankRequest()), 0.0)
    return rank(batch, params, settings.profiles, settings.layers)
