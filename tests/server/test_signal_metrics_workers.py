"""memrank_signal_value on a live 2-worker `memrank serve`: what /metrics shows equals the counts and sums taken
from the responses' own score breakdowns, across both workers and a worker killed and restarted mid-traffic."""

from __future__ import annotations

import math
import os
import signal
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from google.protobuf import json_format

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.client import RankingClient
from tests.server.test_metrics import Samples, _per_worker, free_port, rank_request, scrape, total, write_config
from tests.support.servers import Proc, start_serve, stop

BOUNDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
CONFIGURED = {"session", "durable", "knowledge"}  # the built-in layer policies; any other layer counts as "other"
# Drop reasons of the gates (memrank.core.scoring.gates): a gated candidate's signals are not measured.
GATES = {pb.DROP_REASON_SAFETY_GATED, pb.DROP_REASON_FUTURE_EVENT, pb.DROP_REASON_NOT_YET_VALID,
         pb.DROP_REASON_EXPIRED, pb.DROP_REASON_BELOW_THRESHOLD, pb.DROP_REASON_ZERO_IMPORTANCE}
Key = tuple[str, str, str, str]


def expected(calls: list[tuple[pb.RankRequest, pb.RankResponse]]) -> tuple[dict[Key, list[int]], dict[Key, float]]:
    """Per (signal, form, profile, layer): the values in each bucket (first bound >= value, else +Inf) and their
    sum, from every response's breakdowns; the layer is the one the request gave the candidate."""
    counts: dict[Key, list[int]] = defaultdict(lambda: [0] * (len(BOUNDS) + 1))
    sums: dict[Key, float] = defaultdict(float)
    for request, response in calls:
        layer_of = {c.id: (c.layer if c.layer in CONFIGURED else "other") for c in request.candidates}
        for layer in set(layer_of.values()):  # a layer present in a call has its series, even with no value
            for weight in response.weights:
                for form in ("raw", "normalized"):
                    counts[(weight.signal, form, response.profile, layer)]
        seen = [(m.id, m.breakdown) for m in response.selected] + [
            (m.id, m.breakdown) for m in response.dropped if m.reason not in GATES]
        assert len(seen) + sum(1 for m in response.dropped if m.reason in GATES) == len(request.candidates)
        for memory_id, breakdown in seen:
            assert len(breakdown.signals) == len(response.weights) > 0
            for s in breakdown.signals:
                for form, v in (("raw", s.raw), ("normalized", s.normalized)):
                    assert math.isfinite(v)
                    key = (s.name, form, response.profile, layer_of[memory_id])
                    counts[key][next((i for i, b in enumerate(BOUNDS) if v <= b), len(BOUNDS))] += 1
                    sums[key] += v
    return counts, sums


def assert_scraped(samples: Samples, counts: dict[Key, list[int]], sums: dict[Key, float]) -> None:
    names = ("signal", "form", "profile", "layer")
    series = {tuple(dict(ls)[n] for n in names) for (name, ls) in samples if name == "memrank_signal_value_count"}
    assert series == set(counts)
    for key, buckets in counts.items():
        labels = dict(zip(names, key, strict=True))
        cumulative = np.cumsum(buckets).tolist()
        for le, want in zip([*(str(b) for b in BOUNDS), "+Inf"], cumulative, strict=True):
            assert total(samples, "memrank_signal_value_bucket", **labels, le=le) == want, (key, le)
        assert total(samples, "memrank_signal_value_count", **labels) == cumulative[-1], key
        assert math.isclose(total(samples, "memrank_signal_value_sum", **labels), sums[key], rel_tol=1e-9,
                            abs_tol=1e-9), key


def send(target: str, rng: np.random.Generator, calls: int, out: list[tuple[pb.RankRequest, pb.RankResponse]]) -> None:
    """Rank calls with full breakdowns, a new channel every 2 calls (SO_REUSEPORT spreads them)."""
    for start in range(0, calls, 2):
        with RankingClient(target, timeout=20, retries=10) as client:
            for _ in range(min(2, calls - start)):
                body = rank_request(rng, 0.0, 1.0, explain="EXPLAIN_LEVEL_FULL")
                request = json_format.ParseDict(body, pb.RankRequest())
                out.append((request, client.rank(request)))


def worker_pids(proc: Proc, msg: str = "serving") -> list[int]:
    return [int(str(line["pid"])) for line in proc.lines() if line.get("msg") == msg and "pid" in line]


def test_scraped_signal_histograms_equal_the_responses_breakdowns_over_workers_and_a_restart(
        tmp_path: Path) -> None:
    port, mport = free_port(), free_port()
    proc = start_serve(tmp_path, "--config", str(write_config(tmp_path)), "--address", f"127.0.0.1:{port}",
                       "--metrics-port", str(mport), "--workers", "2", timeout=90)
    calls: list[tuple[pb.RankRequest, pb.RankResponse]] = []
    try:
        target, rng = f"127.0.0.1:{port}", np.random.default_rng(21)
        first = worker_pids(proc)
        send(target, rng, 24, calls)
        assert_scraped(scrape(mport), *expected(calls))  # both workers' counts, added up
        metrics_dir = Path(str(next(line for line in proc.lines() if line["msg"] == "supervising")["metrics_dir"]))
        before_kill = _per_worker(metrics_dir, tmp_path)
        killed = first[0]
        os.kill(killed, signal.SIGKILL)
        deadline = time.monotonic() + 90
        while len(worker_pids(proc)) < 3:  # the supervisor starts a new worker, which logs "serving"
            assert time.monotonic() < deadline, "no worker restarted"
            time.sleep(0.2)
        send(target, rng, 16, calls)
        after = scrape(mport)
    finally:
        assert stop(proc) == 0
    served = {pid: total(w, "memrank_requests_total", method="Rank", code="OK") for pid, w in before_kill.items()}
    assert sorted(served) == sorted(str(p) for p in first) and all(n > 0 for n in served.values()), served
    assert len(calls) == 40
    assert_scraped(after, *expected(calls))  # the killed worker's counts are still in
