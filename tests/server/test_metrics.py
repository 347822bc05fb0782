"""Metrics of a real `memrank serve`: every family after traffic, drift after a shift, 2 workers adding up."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from memrank.client import RankingClient, RankingError
from tests.support.servers import Proc, start_serve, stop

FAMILIES = (
    "memrank_requests_total", "memrank_rank_duration_seconds_bucket", "memrank_signal_value_bucket",
    "memrank_candidates_total", "memrank_selected_total", "memrank_dropped_total",
    "memrank_nothing_selected_total", "memrank_request_candidates_bucket",
    "memrank_layer_budget_utilization_ratio_bucket", "memrank_top_margin_bucket",
    "memrank_signal_drift_psi", "memrank_signal_drift_js",
)
KINDS = ("fact", "preference", "decision", "failure")
LAYERS = ("session", "durable", "knowledge", "scratch")  # scratch has no policy: counted as "other"
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_config(tmp_path: Path, window: int = 200, reference: int = 200, extra: str = "") -> Path:
    """A config with small drift sizes and the metrics listener on loopback."""
    config = tmp_path / "memrank.yaml"
    config.write_text(f"server:\n  metrics_address: 127.0.0.1\n  log_level: info\n"
                      f"drift:\n  window_size: {window}\n  reference_size: {reference}\n{extra}")
    return config


def rank_request(rng: np.random.Generator, low: float, high: float, n: int = 20, **extra: Any) -> dict[str, Any]:
    """A Rank request whose relevance (retrieval scores) is uniform in [low, high]."""
    scores = rng.uniform(low, high, n).round(4)
    cands = [{"id": f"m{i}", "content": f"note {i}: the user likes tea and trains {rng.integers(1000)}",
              "retrievalScore": float(s), "importance": round(float(rng.uniform(0.1, 0.9)), 3),
              "kind": KINDS[i % 4], "layer": LAYERS[i % 4], "accessCount": int(i % 7)}
             for i, s in enumerate(scores)]
    cands.append({"id": "unsafe", "content": "x", "retrievalScore": 0.9, "safety": "SAFETY_STATUS_UNSAFE"})
    # relevanceThreshold 0: the low end of the range must reach the signal histograms, not default's floor.
    return {"query": "tea trains", "referenceTime": "2026-06-01T12:00:00Z", "candidates": cands,
            "budget": {"maxTokens": 120, "maxItems": 8}, "relevanceThreshold": 0, **extra}


def send_traffic(target: str, rng: np.random.Generator, requests: int, low: float, high: float,
                 per_channel: int = 5, errors: int = 0, empty: int = 0) -> int:
    """Send Rank calls (a new channel every ``per_channel`` calls, so SO_REUSEPORT spreads them);
    ``errors`` invalid calls and ``empty`` calls that select nothing. Returns the OK Rank calls."""
    ok = 0
    for start in range(0, requests, per_channel):
        with RankingClient(target, timeout=10, retries=10) as client:
            for _ in range(min(per_channel, requests - start)):
                client.rank(rank_request(rng, low, high))
                ok += 1
    with RankingClient(target, timeout=10, retries=10) as client:
        for _ in range(errors):
            with pytest.raises(RankingError):
                client.rank({"candidates": [{"id": "dup"}, {"id": "dup"}]})
        for _ in range(empty):
            client.rank(rank_request(rng, 0.0, 0.2, minScore=1.0))
            ok += 1
    return ok


def parse(text: str) -> Samples:
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def scrape(port: int) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        return parse(resp.read().decode())


def total(samples: Samples, name: str, **labels: str) -> float:
    return sum(v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= ls)


def value(samples: Samples, name: str, **labels: str) -> float | None:
    found = [v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= ls]
    assert len(found) <= 1, f"{name} {labels}: {len(found)} series"
    return found[0] if found else None


@pytest.fixture()
def sidecar(tmp_path: Path) -> Iterator[tuple[Proc, int]]:
    """One `memrank serve` process with drift window and reference of 200 candidates."""
    mport = free_port()
    proc = start_serve(tmp_path, "--config", str(write_config(tmp_path)), "--address", "127.0.0.1:0",
                       "--metrics-port", str(mport))
    yield proc, mport
    assert stop(proc) == 0


def test_all_families_after_traffic_and_drift_past_act_after_a_relevance_shift(
        sidecar: tuple[Proc, int]) -> None:
    proc, mport = sidecar
    target = f"127.0.0.1:{proc.port}"
    rng = np.random.default_rng(11)
    # 20 eligible candidates a call: 10 calls fill the reference, 10 more the window.
    ok = send_traffic(target, rng, 20, 0.0, 0.4, errors=2, empty=1)
    before = scrape(mport)
    for family in FAMILIES:
        assert any(name == family for name, _ in before), family
    assert total(before, "memrank_requests_total", method="Rank", code="OK") == ok
    assert total(before, "memrank_requests_total", method="Rank", code="INVALID_ARGUMENT") == 2
    assert total(before, "memrank_candidates_total") == 21 * ok
    assert total(before, "memrank_dropped_total", reason="safety_gated") == ok
    assert total(before, "memrank_nothing_selected_total", profile="default") == 1
    assert total(before, "memrank_candidates_total", layer="other") == 6 * ok  # "scratch" x5 + the unsafe one
    layers = {dict(ls).get("layer") for (_, ls) in before} - {None}
    assert layers == {"session", "durable", "knowledge", "other"}
    stable = value(before, "memrank_signal_drift_psi", signal="relevance", profile="default")
    assert stable is not None and stable < 0.25
    # default's speaker_pair has its histogram and drift like every weighed signal (no speaker sent: raw 0).
    assert total(before, "memrank_signal_value_count", signal="speaker_pair", form="raw") == 20 * ok
    assert value(before, "memrank_signal_drift_psi", signal="speaker_pair", profile="default") is not None
    send_traffic(target, rng, 10, 0.6, 1.0)  # the whole window is now shifted
    after = scrape(mport)
    shifted = value(after, "memrank_signal_drift_psi", signal="relevance", profile="default")
    assert shifted is not None and shifted > 0.25, shifted
    js = value(after, "memrank_signal_drift_js", signal="relevance", profile="default")
    assert js is not None and js > 0.5
    importance = value(after, "memrank_signal_drift_psi", signal="importance", profile="default")
    assert importance is not None and importance < 0.1  # drawn from the same distribution throughout


def _memrank(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memrank.cli", *args], capture_output=True, text=True, timeout=60)


def test_drift_snapshot_from_a_live_sidecar_becomes_the_reference(tmp_path: Path,
                                                                   sidecar: tuple[Proc, int]) -> None:
    proc, mport = sidecar
    rng = np.random.default_rng(5)
    send_traffic(f"127.0.0.1:{proc.port}", rng, 10, 0.0, 0.4)
    ref_file = tmp_path / "reference.json"
    out = _memrank("drift", "snapshot", "--metrics-url", f"http://127.0.0.1:{mport}/metrics", "-o", str(ref_file))
    assert out.returncode == 0, out.stderr
    doc = json.loads(ref_file.read_text())
    relevance = next(r for r in doc["references"] if r["signal"] == "relevance" and r["profile"] == "default")
    assert sum(relevance["counts"]) == 200 and sum(relevance["counts"][4:]) == 0  # all of them <= 0.4

    # A new sidecar with that file needs no warm-up reference: one window of shifted traffic shows drift.
    config = write_config(tmp_path, window=100, reference=5000, extra=f"  reference_file: {ref_file}\n")
    mport2 = free_port()
    proc2 = start_serve(tmp_path, "--config", str(config), "--address", "127.0.0.1:0", "--metrics-port",
                        str(mport2))
    try:
        send_traffic(f"127.0.0.1:{proc2.port}", rng, 5, 0.6, 1.0)
        psi = value(scrape(mport2), "memrank_signal_drift_psi", signal="relevance", profile="default")
        assert psi is not None and psi > 0.25
    finally:
        assert stop(proc2) == 0


def test_drift_snapshot_offline_from_request_files(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    lines = tmp_path / "requests.jsonl"
    lines.write_text("\n".join(json.dumps(rank_request(rng, 0.5, 0.6)) for _ in range(3)) + "\n")
    ref_file = tmp_path / "offline.json"
    out = _memrank("drift", "snapshot", str(lines), "--output", str(ref_file))
    assert out.returncode == 0, out.stderr
    refs = {(r["profile"], r["signal"]): r["counts"] for r in json.loads(ref_file.read_text())["references"]}
    assert refs[("default", "relevance")][5] == 60  # 3 calls x 20 gated-in candidates, all in (0.5, 0.6]
    bad = _memrank("drift", "snapshot", "--output", str(ref_file))
    assert bad.returncode == 2 and "either --metrics-url or REQUEST" in bad.stderr


def _per_worker(metrics_dir: Path, tmp_path: Path) -> dict[str, Samples]:
    """Each worker's own samples: its mmap files collected alone."""
    pids = {p.stem.rsplit("_", 1)[1] for p in metrics_dir.glob("*.db")}
    out = {}
    for pid in pids:
        only = tmp_path / f"worker-{pid}"
        only.mkdir()
        for f in metrics_dir.glob(f"*_{pid}.db"):
            shutil.copy(f, only / f.name)
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=str(only))
        out[pid] = parse(generate_latest(registry).decode())
    return out


def test_two_workers_counts_add_up_on_the_supervisor_endpoint(tmp_path: Path) -> None:
    port, mport = free_port(), free_port()
    shadow = "shadow:\n  profile: assistant\n"  # every call shadowed: its agreement histograms add up too
    proc = start_serve(tmp_path, "--config", str(write_config(tmp_path, window=60, reference=60, extra=shadow)),
                       "--address", f"127.0.0.1:{port}", "--metrics-port", str(mport), "--workers", "2")
    try:
        rng = np.random.default_rng(9)
        ok = send_traffic(f"127.0.0.1:{port}", rng, 60, 0.0, 0.4, per_channel=2, errors=3)
        merged = scrape(mport)
        metrics_dir = Path(str(next(line for line in proc.lines() if line["msg"] == "supervising")["metrics_dir"]))
        workers = _per_worker(metrics_dir, tmp_path)
    finally:
        assert stop(proc) == 0
    assert len(workers) == 2
    served = [total(w, "memrank_requests_total", method="Rank", code="OK") for w in workers.values()]
    assert all(n > 0 for n in served), served  # both workers took calls, so the sums below are real sums
    assert total(merged, "memrank_requests_total", method="Rank", code="OK") == ok == sum(served)
    assert total(merged, "memrank_requests_total", code="INVALID_ARGUMENT") == 3
    assert total(merged, "memrank_rank_duration_seconds_count") == ok
    assert total(merged, "memrank_request_candidates_count") == ok
    assert total(merged, "memrank_candidates_total") == 21 * ok
    assert total(merged, "memrank_signal_value_count", signal="relevance", form="raw") == 20 * ok
    assert total(merged, "memrank_selected_total") + total(merged, "memrank_dropped_total") == 21 * ok
    pair = {"profile": "default", "shadow_profile": "assistant"}
    shadowed = [total(w, "memrank_shadow_overlap_at_k_count", **pair) for w in workers.values()]
    assert total(merged, "memrank_shadow_overlap_at_k_count", **pair) == ok == sum(shadowed)
    assert total(merged, "memrank_shadow_overlap_at_k_sum", **pair) == pytest.approx(
        sum(total(w, "memrank_shadow_overlap_at_k_sum", **pair) for w in workers.values()))
    assert total(merged, "memrank_shadow_kendall_tau_count", **pair) == sum(
        total(w, "memrank_shadow_kendall_tau_count", **pair) for w in workers.values())
    # Drift gauges are per worker window: the endpoint shows the largest live value (livemax), once.
    psi = [value(w, "memrank_signal_drift_psi", signal="relevance", profile="default") for w in workers.values()]
    merged_psi = value(merged, "memrank_signal_drift_psi", signal="relevance", profile="default")
    assert merged_psi == max(p for p in psi if p is not None)
    assert not metrics_dir.exists()  # the supervisor cleans up after itself
