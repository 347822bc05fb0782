"""The recorder: one RankOutcome from the real core in, metric updates out, labels bounded by config."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from google.protobuf import json_format
from prometheus_client import CollectorRegistry, Histogram

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.convert import request_to_domain
from memrank.config import DriftSettings, Settings, load_settings
from memrank.core.batch import CandidateInput, RankParams, batch_from_rows
from memrank.core.explain.outcome import RankOutcome
from memrank.core.pipeline import rank
from memrank.core.types import DropReason
from memrank.metrics.declare import Metrics
from memrank.metrics.deferred import AfterReply, FlushFirst
from memrank.metrics.recorder import Recorder, build_recorder

SETTINGS = load_settings(env={})


def outcome(candidates: list[dict[str, Any]], **request: Any) -> RankOutcome:
    body = {"query": "tea", "referenceTime": "2026-06-01T12:00:00Z", "candidates": candidates, **request}
    batch, params = request_to_domain(json_format.ParseDict(body, pb.RankRequest()), 0.0)
    return rank(batch, params, SETTINGS.profiles, SETTINGS.layers)


LAYERS = ("session", "durable", "from-the-caller")


def cands(scores: list[float], layers: tuple[str, ...] = LAYERS) -> list[dict[str, Any]]:
    return [{"id": f"m{i}", "content": f"memory {i} about tea", "retrievalScore": s, "importance": 0.5,
             "layer": layers[i % len(layers)]} for i, s in enumerate(scores)]


def fresh(settings: Settings = SETTINGS) -> tuple[CollectorRegistry, Recorder]:
    registry = CollectorRegistry()
    return registry, build_recorder(Metrics(registry), settings)


def total(registry: CollectorRegistry, sample: str, **labels: str) -> float:
    """Sum of a sample over every series whose labels include ``labels``."""
    out = 0.0
    for family in registry.collect():
        for s in family.samples:
            if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()):
                out += s.value
    return out


def test_counts_match_the_outcome() -> None:
    registry, recorder = fresh()
    unsafe = {"id": "bad", "safety": "SAFETY_STATUS_UNSAFE", "retrievalScore": 0.9, "layer": "session"}
    o = outcome([*cands([i / 10 for i in range(10)]), unsafe], budget={"maxItems": 3})
    recorder.record(o)
    assert total(registry, "memrank_candidates_total", profile="default") == 11
    assert total(registry, "memrank_selected_total", profile="default") == 3 == len(o.ranked)
    assert total(registry, "memrank_dropped_total") == 8
    assert total(registry, "memrank_dropped_total", reason="safety_gated") == 1
    reasons = {DropReason(int(v)).name.lower() for v in o.drop if v}
    assert {s.labels["reason"] for f in registry.collect() for s in f.samples
            if s.name == "memrank_dropped_total"} == reasons
    assert total(registry, "memrank_request_candidates_count") == 1
    assert total(registry, "memrank_request_candidates_sum") == 11
    assert total(registry, "memrank_top_margin_count") == 1


def test_signal_histograms_count_gated_candidates_out_and_cover_every_signal_both_forms() -> None:
    registry, recorder = fresh()
    unsafe = {"id": "bad", "safety": "SAFETY_STATUS_UNSAFE", "retrievalScore": 0.9, "layer": "session"}
    o = outcome([*cands([0.1, 0.2, 0.3, 0.4]), unsafe])
    recorder.record(o)
    for column in o.scores.signals:
        for form in ("raw", "normalized"):
            count = total(registry, "memrank_signal_value_count", signal=column.name, form=form)
            assert count == 4, (column.name, form)
    raw_sum = total(registry, "memrank_signal_value_sum", signal="relevance", form="raw")
    assert raw_sum == pytest.approx(0.1 + 0.2 + 0.3 + 0.4)


def test_layer_label_is_bounded_by_configured_layers_plus_other() -> None:
    registry, recorder = fresh()
    recorder.record(outcome(cands([0.5] * 6, layers=("session", "x-1", "x-2"))))
    layers = {s.labels["layer"] for f in registry.collect() for s in f.samples if "layer" in s.labels}
    assert layers <= {"session", "durable", "knowledge", "other"}
    assert total(registry, "memrank_candidates_total", layer="other") == 4


def test_budget_utilization_is_observed_per_layer_only_with_a_budget() -> None:
    registry, recorder = fresh()
    recorder.record(outcome(cands([0.5] * 6)))
    assert total(registry, "memrank_layer_budget_utilization_ratio_count") == 0
    o = outcome(cands([0.5] * 6), budget={"maxTokens": 400})
    recorder.record(o)
    budgeted = [a for a in o.allocations if a.budget_tokens > 0]
    assert budgeted
    assert total(registry, "memrank_layer_budget_utilization_ratio_count") == len(budgeted)
    expected = sum(a.used_tokens / a.budget_tokens for a in budgeted)
    assert total(registry, "memrank_layer_budget_utilization_ratio_sum") == pytest.approx(expected)


def test_nothing_selected_counts_non_empty_calls_with_an_empty_answer() -> None:
    registry, recorder = fresh()
    recorder.record(outcome([]))
    recorder.record(outcome(cands([0.5, 0.6])))
    assert total(registry, "memrank_nothing_selected_total") == 0
    # Both below a 0.9 floor: an empty answer. (A min_score of 1 no longer empties it: under default's
    # share_constant_weight relevance is the one informative signal here and m1 scores the whole weight, 1.)
    recorder.record(outcome(cands([0.5, 0.6]), relevanceThreshold=0.9))
    assert total(registry, "memrank_nothing_selected_total", profile="default") == 1
    assert total(registry, "memrank_request_candidates_bucket", le="0.0") == 1


def _drift_settings(window: int, reference: int) -> Settings:
    return replace(SETTINGS, drift=DriftSettings(window_size=window, reference_size=reference, reference_file=None))


def test_drift_gauge_rises_past_the_act_threshold_after_a_relevance_shift() -> None:
    registry, recorder = fresh(_drift_settings(window=40, reference=40))
    rng = np.random.default_rng(3)
    for _ in range(4):  # 40 reference values, then 40 unshifted in the window (no floor: every value counts)
        recorder.record(outcome(cands(rng.uniform(0.0, 0.5, 20).round(3).tolist()), relevanceThreshold=0))
    stable = registry.get_sample_value("memrank_signal_drift_psi", {"signal": "relevance", "profile": "default"})
    assert stable is not None and stable < 0.25
    for _ in range(2):
        recorder.record(outcome(cands(rng.uniform(0.6, 1.0, 20).round(3).tolist()), relevanceThreshold=0))
    shifted = registry.get_sample_value("memrank_signal_drift_psi", {"signal": "relevance", "profile": "default"})
    js_value = registry.get_sample_value("memrank_signal_drift_js", {"signal": "relevance", "profile": "default"})
    assert shifted is not None and shifted > 0.25
    assert js_value is not None and 0.5 < js_value <= 1.0
    importance = registry.get_sample_value("memrank_signal_drift_psi", {"signal": "importance", "profile": "default"})
    assert importance == pytest.approx(0.0, abs=1e-9)  # unchanged signal, no drift


def test_recording_never_raises() -> None:
    registry, recorder = fresh()
    recorder.record(object())  # type: ignore[arg-type]
    assert total(registry, "memrank_candidates_total") == 0


def test_after_reply_records_every_outcome_by_the_time_a_scrape_reads() -> None:
    registry = CollectorRegistry()
    flush = FlushFirst()
    registry.register(flush)
    recorder = build_recorder(Metrics(registry), SETTINGS)
    deferred = AfterReply(recorder)
    flush.target = deferred
    batch = batch_from_rows([CandidateInput(id=f"m{i}", content="we decided to use postgres", importance=0.5,
                                            retrieval_score=0.1 * i) for i in range(5)])
    outcome = rank(batch, RankParams("postgres", 0.0), SETTINGS.profiles)
    for _ in range(50):
        deferred.record(outcome)
    # get_sample_value collects every collector, FlushFirst first: all 50 are in, none lost.
    assert registry.get_sample_value("memrank_request_candidates_count") == 50
    assert registry.get_sample_value("memrank_candidates_total", {"profile": "default", "layer": "other"}) == 250


# memrank_signal_value's bucket bounds, as the dashboards and the drift reference files read them.
SIGNAL_BOUNDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


class Slow:
    """The one-value-at-a-time reference: memrank's counters and gauges on ``registry``, and the signal histogram
    as a prometheus_client Histogram on a registry of its own (``histogram_registry``)."""

    def __init__(self, drift: Any) -> None:
        self.registry, self.histogram_registry = CollectorRegistry(), CollectorRegistry()
        self.metrics = Metrics(self.registry)
        self.signal_value = Histogram("memrank_signal_value", "x", ("signal", "form", "profile", "layer"),
                                      buckets=SIGNAL_BOUNDS, registry=self.histogram_registry)
        self.drift = drift


def _one_by_one(slow: Slow, o: RankOutcome, profile: str) -> None:
    """The slow definition of the signal and layer metrics: every value observed by itself, in candidate order."""
    metrics, drift = slow.metrics, slow.drift
    bounded = {"session", "durable", "knowledge"}
    layer = ["other" if name not in bounded else name for name in o.layer_of]
    measured = [int(g) == 0 for g in o.scores.gate]
    for name in sorted(set(layer)):
        members = [i for i in range(o.n) if layer[i] == name]
        metrics.candidates.labels(profile=profile, layer=name).inc(len(members))
        metrics.selected.labels(profile=profile, layer=name).inc(sum(1 for i in members if int(o.drop[i]) == 0))
        for column in o.scores.signals:
            for form, values in (("raw", column.raw), ("normalized", column.normalized)):
                child = slow.signal_value.labels(signal=column.name, form=form, profile=profile, layer=name)
                for i in members:
                    if measured[i] and np.isfinite(values[i]):
                        child.observe(float(values[i]))
    for column in o.scores.signals:
        kept = [float(column.raw[i]) for i in range(o.n) if measured[i] and not np.isnan(column.raw[i])]
        reading = drift.update(profile, column.name, np.array(kept))
        if reading is not None:
            metrics.drift_psi.labels(signal=column.name, profile=profile).set(reading.psi)
            metrics.drift_js.labels(signal=column.name, profile=profile).set(reading.js)


Series = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _series(*registries: CollectorRegistry) -> Series:
    families = ("memrank_signal_value", "memrank_candidates", "memrank_selected", "memrank_signal_drift")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for r in registries for f in r.collect()
            for s in f.samples if s.name.startswith(families) and not s.name.endswith("_created")}


def _read(family: Any) -> Series:
    """A family's samples read from the metric itself, not through the registry: no FlushFirst runs."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in family.collect()
            for s in f.samples if not s.name.endswith("_created")}


def _fast_and_slow() -> tuple[CollectorRegistry, Recorder, Slow]:
    """A recorder under test, and the one-value-at-a-time reference with a drift tracker of its own."""
    fast_registry, fast = fresh(_drift_settings(window=30, reference=25))
    slow_drift = build_recorder(Metrics(CollectorRegistry()), _drift_settings(window=30, reference=25)).drift
    return fast_registry, fast, Slow(slow_drift)


def _assert_same_series(fast_registry: CollectorRegistry, slow: Slow) -> None:
    """The same series with the same values (histogram sums to rounding: they add in another order)."""
    got, want = _series(fast_registry), _series(slow.registry, slow.histogram_registry)
    assert got.keys() == want.keys()
    for key, value in want.items():
        if key[0].endswith("_sum"):
            assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
        else:
            assert got[key] == value, key


@pytest.mark.parametrize("seed", range(6))
def test_column_recording_equals_observing_every_value_by_itself(seed: int) -> None:
    """Buckets, counts, counters and drift gauges agree exactly with per-value observe(); sums to rounding."""
    rng = np.random.default_rng(seed)
    fast_registry, fast, slow = _fast_and_slow()
    layer_names = ("session", "durable", "knowledge", "x-1", "x-2")
    for call in range(4):
        n = int(rng.integers(0, 40))
        rows = [{"id": f"m{call}-{i}", "content": f"memory {i} about tea " + "green " * int(rng.integers(0, 4)),
                 "retrievalScore": float(rng.choice([0.0, 0.25, 0.5, 1.0, rng.uniform()])),
                 "importance": float(rng.choice([0.0, 0.3, rng.uniform()])),
                 "layer": str(rng.choice(layer_names)),
                 **({"safety": "SAFETY_STATUS_UNSAFE"} if rng.uniform() < 0.15 else {})} for i in range(n)]
        o = outcome(rows, profile=str(rng.choice(["default", "lians-recall", "generative-agents"])))
        fast.record(o)
        _one_by_one(slow, o, o.profile.name)
    _assert_same_series(fast_registry, slow)


def test_histograms_and_drift_gauges_published_at_scrape_equal_the_per_call_ones() -> None:
    settings = _drift_settings(window=40, reference=40)
    inline_registry, inline = fresh(settings)
    registry = CollectorRegistry()
    flush = FlushFirst()
    registry.register(flush)
    metrics = Metrics(registry)
    deferred = AfterReply(build_recorder(metrics, settings))
    flush.target = deferred
    rng = np.random.default_rng(5)
    keys = [{"signal": s, "profile": "default"} for s in ("relevance", "importance", "recency")]
    for low, high in ((0.0, 0.5),) * 4 + ((0.6, 1.0),) * 2:
        o = outcome(cands(rng.uniform(low, high, 20).round(3).tolist()))
        inline.record(o)
        deferred.record(o)
        for key in keys:  # every read is a scrape: flush, publish, then collect
            for name in ("memrank_signal_drift_psi", "memrank_signal_drift_js"):
                assert registry.get_sample_value(name, key) == inline_registry.get_sample_value(name, key)
        got, want = _series(registry), _series(inline_registry)
        assert got.keys() == want.keys()
        for series, number in want.items():
            assert got[series] == (pytest.approx(number, rel=1e-12) if series[0].endswith("_sum") else number)
    assert inline_registry.get_sample_value("memrank_signal_drift_psi", keys[0]) is not None
    # A call's signal values are in the histogram at once; its drift gauges are set at the scrape.
    o = outcome(cands([0.95] * 20, layers=("session",)))
    gauges = _read(metrics.drift_psi)
    deferred.record(o)  # read from the families themselves: no scrape, no flush
    inline.record(o)
    assert _read(metrics.signal_value) == pytest.approx(_read(inline.metrics.signal_value), rel=1e-12)
    assert _read(metrics.drift_psi) == gauges != _read(inline.metrics.drift_psi)
    assert _series(registry) == pytest.approx(_series(inline_registry), rel=1e-12)


def _poisoned(o: RankOutcome, rng: np.random.Generator) -> RankOutcome:
    """The outcome with NaN, +inf and -inf written into some raw and normalized signal values."""
    columns = []
    for column in o.scores.signals:
        raw, normalized = column.raw.copy(), column.normalized.copy()
        for values in (raw, normalized):
            values[rng.integers(0, o.n, 3)] = rng.choice([np.nan, np.inf, -np.inf], 3)
        columns.append(replace(column, raw=raw, normalized=normalized))
    return replace(o, scores=replace(o.scores, signals=tuple(columns)))


@pytest.mark.parametrize("seed", range(3))
def test_non_finite_signal_values_are_recorded_as_observing_each_value(seed: int) -> None:
    """NaN is in no histogram and no drift window; an infinity is in no histogram but in the drift window."""
    rng = np.random.default_rng(seed)
    fast_registry, fast, slow = _fast_and_slow()
    for call in range(4):
        unsafe = [{"id": "bad", "safety": "SAFETY_STATUS_UNSAFE", "retrievalScore": 0.9}] if call % 2 else []
        o = _poisoned(outcome([*cands(rng.uniform(0, 1, 20).tolist()), *unsafe]), rng)
        fast.record(o)
        _one_by_one(slow, o, o.profile.name)
    _assert_same_series(fast_registry, slow)
    # The windows filled: drift was compared.
    assert any(key[0] == "memrank_signal_drift_psi" for key in _series(slow.registry))
