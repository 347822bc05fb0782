"""Drift reference files: written by `memrank drift snapshot`, read through `drift.reference_file`.

A reference is the binned distribution of each signal's raw values per
profile, on the bins of ``memrank_signal_value``. It comes from a live
sidecar's /metrics (bucket counts summed over layers) or from ranking
requests offline. The file is JSON::

    {"format": "memrank.drift.reference.v1", "bounds": [0.1, ..., 1.0],
     "references": [{"profile": "default", "signal": "relevance", "counts": [11 ints]}]}
"""

from __future__ import annotations

import json
import math
import urllib.request
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
from prometheus_client.parser import text_string_to_metric_families

from memrank.core.errors import ConfigError
from memrank.core.explain.outcome import RankOutcome
from memrank.metrics.drift import BIN_COUNT, SIGNAL_BUCKETS, bin_counts
from memrank.metrics.measured import raw_signals
from memrank.metrics.window import Key

FORMAT = "memrank.drift.reference.v1"
KEY = "drift.reference_file"


def write_reference(path: str | Path, references: Mapping[Key, np.ndarray]) -> None:
    """Write references as a reference file (sorted, so the same data gives the same bytes)."""
    rows = [{"profile": p, "signal": s, "counts": [int(c) for c in references[(p, s)]]}
            for p, s in sorted(references)]
    doc = {"format": FORMAT, "bounds": list(SIGNAL_BUCKETS), "references": rows}
    Path(path).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def load_reference(path: str) -> dict[Key, np.ndarray]:
    """Read a reference file; every problem is a ConfigError naming drift.reference_file."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{KEY}: cannot read {path!r}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{KEY}: {path!r} is not JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ConfigError(f"{KEY}: {path!r} is not a {FORMAT} file")
    if [float(b) for b in doc.get("bounds", ())] != list(SIGNAL_BUCKETS):
        raise ConfigError(f"{KEY}: {path!r} has bounds {doc.get('bounds')!r}, expected {list(SIGNAL_BUCKETS)!r}")
    out: dict[Key, np.ndarray] = {}
    for i, row in enumerate(doc.get("references", ())):
        counts = row.get("counts") if isinstance(row, dict) else None
        if (not isinstance(counts, list) or len(counts) != BIN_COUNT
                or not all(isinstance(c, int) and c >= 0 for c in counts) or sum(counts) == 0):
            raise ConfigError(f"{KEY}: {path!r} references[{i}].counts must be {BIN_COUNT} non-negative "
                              "integers, not all zero")
        out[(str(row.get("profile")), str(row.get("signal")))] = np.array(counts, dtype=np.int64)
    return out


def from_exposition(text: str) -> dict[Key, np.ndarray]:
    """References from /metrics text: memrank_signal_value{form="raw"} buckets, summed over layers."""
    cumulative: dict[Key, dict[float, float]] = {}
    for family in text_string_to_metric_families(text):
        if family.name != "memrank_signal_value":
            continue
        for sample in family.samples:
            if sample.name != "memrank_signal_value_bucket" or sample.labels.get("form") != "raw":
                continue
            key = (sample.labels["profile"], sample.labels["signal"])
            le = float(sample.labels["le"])
            per_key = cumulative.setdefault(key, {})
            per_key[le] = per_key.get(le, 0.0) + sample.value
    out: dict[Key, np.ndarray] = {}
    bounds = [*SIGNAL_BUCKETS, math.inf]
    for key, by_le in cumulative.items():
        cum = np.array([by_le.get(b, 0.0) for b in bounds])
        counts = np.diff(cum, prepend=0.0).round().astype(np.int64)
        if counts.sum() > 0:
            out[key] = counts
    return out


def from_metrics_url(url: str, timeout: float = 10.0) -> dict[Key, np.ndarray]:
    """References scraped from a live sidecar's /metrics endpoint."""
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return from_exposition(resp.read().decode("utf-8"))


def from_outcomes(outcomes: Iterable[RankOutcome]) -> dict[Key, np.ndarray]:
    """References from ranking outcomes (an offline run over recorded requests)."""
    out: dict[Key, np.ndarray] = {}
    for outcome in outcomes:
        for signal, values in raw_signals(outcome):
            key = (outcome.profile.name, signal)
            out[key] = out.get(key, np.zeros(BIN_COUNT, np.int64)) + bin_counts(values)
    return {k: v for k, v in out.items() if v.sum() > 0}
