"""Load: ghz against a real `memrank serve` at fixed concurrency, with RSS, errors and "nothing lost".

Run as a soak:  python -m tests.reliability.load --duration 600 --concurrency 16 --workers 2
(prints one JSON report; exits 1 when a check fails). The pytest test runs it for a short time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil
from google.protobuf import json_format

from memrank.client import RankingClient, RankingError
from tests.reliability.conftest import accounted, rank_request
from tests.support.servers import start_serve, stop

CANDIDATES = 20
RSS_GROWTH_BOUND_MIB = 48.0  # after warm-up (drift windows full, caches warm); documented in the README
P99_BOUND_MS = 1000.0


def ghz_binary() -> str | None:
    """ghz on PATH or in GOPATH/bin."""
    found = shutil.which("ghz")
    if found:
        return found
    gopath = Path(os.environ.get("GOPATH", Path.home() / "go")) / "bin" / "ghz"
    return str(gopath) if gopath.exists() else None


@dataclass
class Report:
    """What one load run held."""

    duration_s: float
    concurrency: int
    workers: int
    requests: int = 0
    rps: float = 0.0
    errors: int = 0
    status_codes: dict[str, int] = field(default_factory=dict)
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    rss_warm_mib: float = 0.0
    rss_end_mib: float = 0.0
    rss_growth_mib: float = 0.0
    verified_responses: int = 0
    lost_in_verified: int = 0
    candidates_in: float = 0.0
    candidates_out: float = 0.0
    ok_rank_calls: float = 0.0
    failures: list[str] = field(default_factory=list)


def _rss_mib(pid: int) -> float:
    proc = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [proc, *proc.children(recursive=True)]) / 2**20


def _ghz(target: str, seconds: float, concurrency: int, data: Path, out: Path) -> dict[str, object]:
    cmd = [ghz_binary() or "ghz", "--insecure", "--call", "memrank.v1.RankingService.Rank",
           "-c", str(concurrency), "-z", f"{seconds:g}s", "--duration-stop", "wait",  # in-flight calls finish
           "--connections", str(max(1, concurrency // 4)),
           "-D", str(data), "--timeout", "20s", "-O", "json", "-o", str(out), target]
    done = subprocess.run(cmd, timeout=seconds + 120, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"ghz exited {done.returncode}: {done.stderr or done.stdout}")
    return dict(json.loads(out.read_text()))


def _metric_sum(text: str, name: str, where: str = "") -> float:
    total = 0.0
    for line in text.splitlines():
        if (line.startswith(name + "{") or line.startswith(name + " ")) and where in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def _verify(target: str, stop_at: float, report: Report) -> None:
    """A client beside ghz that checks every candidate of every response is accounted for."""
    with RankingClient(target, retries=0, timeout=20) as client:
        i = 0
        while time.monotonic() < stop_at:
            request = rank_request(CANDIDATES, seed=i, request_id=f"verify-{i}")
            if not accounted(request, client.rank(request)):
                report.lost_in_verified += 1
            report.verified_responses += 1
            i += 1


def run(seconds: float, concurrency: int, workers: int = 1, warmup: float = 5.0) -> Report:
    """Serve, warm up, load with ghz while a verifier checks responses, then drain; return the report."""
    report = Report(seconds, concurrency, workers)
    with tempfile.TemporaryDirectory(prefix="memrank-load-") as tmp_dir:
        tmp = Path(tmp_dir)
        metrics_port = _free_port()
        address = f"127.0.0.1:{_free_port() if workers > 1 else 0}"
        proc = start_serve(tmp, "--address", address, "--metrics-port", str(metrics_port),
                           "--workers", str(workers))
        target = f"127.0.0.1:{proc.port}"
        try:
            _wait_ready(target)
            data = tmp / "request.json"
            data.write_text(json_format.MessageToJson(rank_request(CANDIDATES, seed=42)))
            _ghz(target, warmup, concurrency, data, tmp / "warmup.json")
            report.rss_warm_mib = _rss_mib(proc.popen.pid)
            before = _scrape(metrics_port)
            verifier = threading.Thread(target=_verify, args=(target, time.monotonic() + seconds, report))
            verifier.start()
            result = _ghz(target, seconds, concurrency, data, tmp / "load.json")
            verifier.join(seconds + 60)
            report.rss_end_mib = _rss_mib(proc.popen.pid)
            after = _scrape(metrics_port)
        finally:
            assert stop(proc, signal.SIGTERM) == 0
    _fill(report, result, before, after)
    return report


def _wait_ready(target: str, timeout: float = 30.0) -> None:
    """Until the port answers SERVING (the supervisor logs before its workers have bound it)."""
    deadline = time.monotonic() + timeout
    with RankingClient(target, retries=0, timeout=2) as client:
        while True:
            try:
                if client.health() == "SERVING":
                    return
            except RankingError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.1)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as page:
        return str(page.read().decode())


def _fill(report: Report, result: dict[str, object], before: str, after: str) -> None:
    codes = dict(result.get("statusCodeDistribution") or {})  # type: ignore[call-overload]
    report.status_codes = {str(k): int(v) for k, v in codes.items()}
    report.requests = int(result["count"])  # type: ignore[call-overload]
    report.rps = round(float(result["rps"]), 1)  # type: ignore[arg-type]
    report.errors = sum(v for k, v in report.status_codes.items() if k != "OK") + report.lost_in_verified
    lat = {int(d["percentage"]): float(d["latency"]) / 1e6 for d in result["latencyDistribution"]}  # type: ignore
    report.p50_ms, report.p99_ms = round(lat[50], 2), round(lat[99], 2)
    report.rss_growth_mib = round(report.rss_end_mib - report.rss_warm_mib, 1)
    report.rss_warm_mib, report.rss_end_mib = round(report.rss_warm_mib, 1), round(report.rss_end_mib, 1)

    def delta(name: str, where: str = "") -> float:
        return _metric_sum(after, name, where) - _metric_sum(before, name, where)

    report.ok_rank_calls = delta("memrank_requests_total", 'code="OK",method="Rank"')
    report.candidates_in = delta("memrank_candidates_total")
    report.candidates_out = delta("memrank_selected_total") + delta("memrank_dropped_total")
    checks = [
        (report.errors == 0, f"errors: {report.status_codes}, lost in verified responses: {report.lost_in_verified}"),
        (report.ok_rank_calls == report.requests + report.verified_responses,
         f"server counted {report.ok_rank_calls} OK Rank calls, clients {report.requests + report.verified_responses}"),
        (report.candidates_in == report.candidates_out == report.ok_rank_calls * CANDIDATES,
         f"candidates in {report.candidates_in}, out {report.candidates_out}"),
        (report.rss_growth_mib <= RSS_GROWTH_BOUND_MIB, f"RSS grew {report.rss_growth_mib} MiB"),
        (report.p99_ms <= P99_BOUND_MS, f"p99 {report.p99_ms} ms"),
    ]
    report.failures = [why for ok, why in checks if not ok]


def main(argv: list[str] | None = None) -> int:
    """The soak / CI load command."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load after warm-up")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--output", help="also write the JSON report here")
    args = parser.parse_args(argv)
    if ghz_binary() is None:
        print("ghz not found: go install github.com/bojand/ghz/cmd/ghz@v0.121.0", file=sys.stderr)
        return 2
    report = run(args.duration, args.concurrency, args.workers)
    text = json.dumps(asdict(report), indent=2)
    print(text)
    if args.output:
        Path(args.output).write_text(text + "\n")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
