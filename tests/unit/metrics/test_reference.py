"""Drift reference files and the drift config section: round trip, sources agree, errors name the key."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from prometheus_client import CollectorRegistry, Histogram, generate_latest

from memrank.config import load_settings
from memrank.core.errors import ConfigError
from memrank.metrics.drift import BIN_COUNT, bin_counts
from memrank.metrics.reference import from_exposition, load_reference, write_reference
from tests.unit.metrics.test_recorder import SIGNAL_BOUNDS


def test_write_then_load_round_trips(tmp_path: Path) -> None:
    refs = {("default", "relevance"): np.arange(BIN_COUNT, dtype=np.int64) + 1,
            ("support", "recency"): np.eye(BIN_COUNT, dtype=np.int64)[3]}
    path = tmp_path / "ref.json"
    write_reference(path, refs)
    loaded = load_reference(str(path))
    assert {k: v.tolist() for k, v in loaded.items()} == {k: v.tolist() for k, v in refs.items()}


def test_reference_from_metrics_sums_layers_and_ignores_normalized() -> None:
    registry = CollectorRegistry()  # /metrics text as prometheus_client's own histogram writes it
    h = Histogram("memrank_signal_value", "x", ("signal", "form", "profile", "layer"), buckets=SIGNAL_BOUNDS,
                  registry=registry)
    a, b = np.array([0.05, 0.15, 0.95]), np.array([0.15, 0.45, 1.2])
    for layer, form, values in (("session", "raw", a), ("other", "raw", b), ("other", "normalized", np.ones(50))):
        child = h.labels(signal="relevance", form=form, profile="default", layer=layer)
        for v in values.tolist():
            child.observe(v)
    refs = from_exposition(generate_latest(registry).decode())
    assert list(refs) == [("default", "relevance")]
    assert refs[("default", "relevance")].tolist() == bin_counts(np.concatenate([a, b])).tolist()


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("not json", "is not JSON"),
        (json.dumps({"format": "other"}), "is not a memrank.drift.reference.v1 file"),
        (json.dumps({"format": "memrank.drift.reference.v1", "bounds": [0.5, 1.0]}), "has bounds"),
        (json.dumps({"format": "memrank.drift.reference.v1", "bounds": [i / 10 for i in range(1, 11)],
                     "references": [{"profile": "p", "signal": "s", "counts": [1, 2]}]}),
         "references[0].counts must be 11"),
    ],
)
def test_bad_reference_files_name_the_key(tmp_path: Path, content: str, needle: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match=r"^drift\.reference_file: ") as err:
        load_reference(str(path))
    assert needle in str(err.value)


def test_drift_defaults() -> None:
    d = load_settings(env={}).drift
    assert (d.window_size, d.reference_size, d.reference_file) == (5000, 5000, None)


@pytest.mark.parametrize(
    ("yaml_text", "needle"),
    [
        ("drift:\n  window_size: 5\n", "drift.window_size: 5 is outside"),
        ("drift:\n  reference_size: lots\n", "drift.reference_size: expected int, got 'lots'"),
        ("drift:\n  reference_file: /nonexistent/ref.json\n", "drift.reference_file: '/nonexistent/ref.json'"),
        ("drift:\n  windowsize: 50\n", "drift.windowsize: unknown key"),
    ],
)
def test_drift_config_errors_name_the_key(tmp_path: Path, yaml_text: str, needle: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(yaml_text)
    with pytest.raises(ConfigError, match="drift") as err:
        load_settings(str(config), env={})
    assert needle in str(err.value)


def test_drift_config_from_a_file(tmp_path: Path) -> None:
    ref = tmp_path / "ref.json"
    write_reference(ref, {("default", "relevance"): np.ones(BIN_COUNT, np.int64)})
    config = tmp_path / "c.yaml"
    config.write_text(f"drift:\n  window_size: 50\n  reference_size: 60\n  reference_file: {ref}\n")
    d = load_settings(str(config), env={}).drift
    assert (d.window_size, d.reference_size, d.reference_file) == (50, 60, str(ref))
