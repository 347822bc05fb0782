"""Cost of the decision log on the request path, side by side in one run.

    python -m bench.decision_log_ab [--rounds 40] [--wire-calls 200] [--fsync-only] [--fsync-dir DIR]
    python -m bench.decision_log_ab --s3-url s3://bucket/prefix/ [--s3-endpoint URL] [--wire-calls 200]

At 400 candidates with 384-dim embeddings (the bench's seeded workload; the
`default` profile, diversity on, k = 20), ``decision_log.sample_rate`` 1,
content ``omit``, file sink:

- handler: the median thread-CPU time of ``handle_rank`` with the decision
  log's hook (capture + queue) and without it, called alternately;
- capture: the hook alone; writer: formatting one record (``record.to_line``),
  which runs in the log writer process, not the handler's;
- under load: 4 closed-loop callers on a log-off server and on one whose
  queue holds a single record (most records dropped and counted): requests/s;
- over the wire: two real ``memrank serve --workers 1`` on loopback, log off
  and log on, sequential calls alternated between them: wall p50 and p99, the
  server process's CPU per call, and (log on) the writer process's CPU per call;
- durability: the writer's own loop (``FileSink.write`` then the fsync policy of
  ``decision_log.fsync``, as ``memrank.decisions.writer`` runs them) writing the
  bench's record to a file in ``--fsync-dir`` (default: the temporary folder):
  wall time per record and records/s for ``never``, ``interval`` (1 s) and
  ``every``. The writer's records/s bounds what the log takes before its queue
  fills and records are refused (queue_full).
- ``--s3-url``: only the over-the-wire rows, sink file against sink s3 (the writer's CPU per call is the s3
  writer's: formatting, gzip, upload).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from prometheus_client import CollectorRegistry

from bench.data import workload
from bench.live import Caller, serve, throughput
from bench.timing import children, measure, measure_pair, proc_cpu_seconds
from memrank.api import convert
from memrank.api.call import Call, Policy, RankInput, handle_rank
from memrank.api.encode import outcome_to_proto
from memrank.api.validate import validate_rank_request
from memrank.config import DecisionLogSettings, load_settings
from memrank.config.keys import DECISION_FSYNC
from memrank.core.pipeline import rank
from memrank.decisions.capture import capture_decision
from memrank.decisions.durability import Durability
from memrank.decisions.mask import Masker
from memrank.decisions.record import to_line
from memrank.decisions.sink import FileSink
from memrank.grpc.service import RankingService
from memrank.metrics.declare import Metrics


def pct(new: float, base: float) -> str:
    """How much ``new`` is above ``base``, signed, in per cent."""
    return f"{100 * (new - base) / base:+.1f} %"


def in_process(rounds: int, folder: Path) -> dict[str, float]:
    s = load_settings(env={})
    logging = replace(s, decision_log=DecisionLogSettings(enabled=True, sink="file", path=str(folder / "d.jsonl"),
                                                          queue_size=100_000))
    service = RankingService(logging, Metrics(CollectorRegistry()))
    req = workload(400, 384).request
    now = time.time()
    try:
        parsed, policy = RankInput(req), Policy.of(s)
        off, on = measure_pair(lambda: handle_rank(parsed, policy, Call(now)),
                               lambda: handle_rank(parsed, policy, Call(now, decide=service._decide)), rounds)
        cols = validate_rank_request(req, s.limits, profiles=s.profiles)
        batch, params = convert.request_to_domain(req, now, cols)
        outcome = rank(batch, params, s.profiles, s.layers)
        resp = outcome_to_proto(outcome, batch, params, "bench", s.policy_version)
        capture = measure(lambda: capture_decision(outcome, batch, params, resp, now, "omit", False), rounds)
        c = capture_decision(outcome, batch, params, resp, now, "omit", False)
        writer = measure(lambda: to_line(c, Masker("omit")), rounds)
        size = len(to_line(c, Masker("omit")))
    finally:
        service.close()
    return {"handler_off_ms": off.cpu_p50, "handler_on_ms": on.cpu_p50, "capture_ms": capture.cpu_p50,
            "writer_ms": writer.cpu_p50, "record_bytes": size}


def file_env(folder: Path) -> dict[str, str]:
    return {"MEMRANK_DECISION_LOG_ENABLED": "true", "MEMRANK_DECISION_LOG_SINK": "file",
            "MEMRANK_DECISION_LOG_PATH": str(folder / "wire.jsonl"), "MEMRANK_DECISION_LOG_QUEUE_SIZE": "100000"}


def s3_env(url: str, endpoint: str | None) -> dict[str, str]:
    """Sink s3 to ``url`` (credentials: the AWS_* variables of this process, which the server inherits)."""
    return {"MEMRANK_DECISION_LOG_ENABLED": "true", "MEMRANK_DECISION_LOG_SINK": "s3",
            "MEMRANK_DECISION_LOG_S3_URL": url, "MEMRANK_DECISION_LOG_QUEUE_SIZE": "100000",
            "MEMRANK_DECISION_LOG_S3_BATCH_SECONDS": "1"} | (
        {"MEMRANK_DECISION_LOG_S3_ENDPOINT": endpoint} if endpoint else {})


def over_the_wire(calls: int, folder: Path, off_env: dict[str, str] | None = None,
                  on_env: dict[str, str] | None = None) -> dict[str, float]:
    """Calls alternated between two servers: by default log off (``off``) and the file sink (``on``)."""
    data = workload(400, 384).request.SerializeToString()
    on_env = file_env(folder) if on_env is None else on_env
    with serve(1, env_extra=off_env) as off, serve(1, env_extra=on_env) as on, \
            Caller(f"127.0.0.1:{off.port}") as a, Caller(f"127.0.0.1:{on.port}") as b:
        for _ in range(10):
            a.rank(data), b.rank(data)
        writer, writer_off = children(on.popen.pid), children(off.popen.pid)  # off: none when its log is off
        cpu = [off.cpu_seconds(), on.cpu_seconds(), sum(map(proc_cpu_seconds, writer)),
               sum(map(proc_cpu_seconds, writer_off))]
        wall_a, wall_b = [], []
        for _ in range(calls):
            t = time.perf_counter()
            a.rank(data)
            wall_a.append(time.perf_counter() - t)
            t = time.perf_counter()
            b.rank(data)
            wall_b.append(time.perf_counter() - t)
        time.sleep(1.0)  # the writer catches up
        after = [off.cpu_seconds(), on.cpu_seconds(), sum(map(proc_cpu_seconds, writer)),
                 sum(map(proc_cpu_seconds, writer_off))]
    per = [(x - y) / calls * 1e3 for x, y in zip(after, cpu, strict=True)]
    return {"p50_off_ms": float(np.median(wall_a)) * 1e3, "p50_on_ms": float(np.median(wall_b)) * 1e3,
            "p99_off_ms": float(np.percentile(wall_a, 99)) * 1e3, "p99_on_ms": float(np.percentile(wall_b, 99)) * 1e3,
            "server_cpu_off_ms": per[0], "server_cpu_on_ms": per[1], "writer_cpu_ms": per[2],
            "writer_cpu_off_ms": per[3]}


def under_load(seconds: float, folder: Path) -> dict[str, float]:
    """Closed-loop load (4 callers) on a log-off server and on one whose queue holds 1 record, alternately."""
    data = workload(400, 384).request.SerializeToString()
    tiny = {"MEMRANK_DECISION_LOG_ENABLED": "true", "MEMRANK_DECISION_LOG_SINK": "file",
            "MEMRANK_DECISION_LOG_PATH": str(folder / "tiny.jsonl"), "MEMRANK_DECISION_LOG_QUEUE_SIZE": "1"}
    rps_off, rps_tiny = [], []
    with serve(1) as off, serve(1, env_extra=tiny) as small:
        for _ in range(2):
            rps_off.append(throughput(f"127.0.0.1:{off.port}", data, seconds, 4)["rps"])
            rps_tiny.append(throughput(f"127.0.0.1:{small.port}", data, seconds, 4)["rps"])
        time.sleep(1.0)
    written = sum(1 for _ in (folder / "tiny.jsonl").open())
    calls = sum(rps_tiny) * seconds + 8  # + the warm-up calls
    return {"rps_off": float(np.mean(rps_off)), "rps_tiny": float(np.mean(rps_tiny)), "written": written,
            "calls": calls}


def fsync_cost(records: int, folder: Path) -> dict[str, dict[str, float]]:
    """Wall time per record of the writer's write + fsync policy, for each policy, on a file in ``folder``."""
    s = load_settings(env={})
    req = workload(400, 384).request
    now = time.time()
    cols = validate_rank_request(req, s.limits, profiles=s.profiles)
    batch, params = convert.request_to_domain(req, now, cols)
    outcome = rank(batch, params, s.profiles, s.layers)
    resp = outcome_to_proto(outcome, batch, params, "bench", s.policy_version)
    line = to_line(capture_decision(outcome, batch, params, resp, now, "omit", False), Masker("omit"))
    out: dict[str, dict[str, float]] = {}
    for policy in DECISION_FSYNC:
        path = folder / f"fsync-{policy}.jsonl"
        sink = FileSink(str(path), 1 << 40, 0)
        durable = Durability(sink, policy, 1.0, lambda exc: None)
        seconds = []
        try:
            for _ in range(records):
                t = time.perf_counter()
                sink.write(line)
                durable.written()
                seconds.append(time.perf_counter() - t)
        finally:
            durable.close()
            sink.close()
        total = sum(seconds)
        out[policy] = {"p50_ms": float(np.median(seconds)) * 1e3, "p99_ms": float(np.percentile(seconds, 99)) * 1e3,
                       "records_per_s": records / total, "bytes": len(line)}
    return out


def main() -> None:
    """Print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--wire-calls", type=int, default=200)
    ap.add_argument("--load-seconds", type=float, default=4.0)
    ap.add_argument("--fsync-records", type=int, default=300)
    ap.add_argument("--fsync-dir", type=Path, default=None, help="a folder on the disk to measure (default: tmp)")
    ap.add_argument("--fsync-only", action="store_true", help="only the durability table")
    ap.add_argument("--s3-url", help="only sink file against sink s3 to this s3://bucket/prefix/, over the wire")
    ap.add_argument("--s3-endpoint", help="an S3-compatible server's URL for --s3-url")
    args = ap.parse_args()
    if args.s3_url:
        sinks(args.wire_calls, args.s3_url, args.s3_endpoint)
        return
    with tempfile.TemporaryDirectory(dir=args.fsync_dir) as tmp:
        f = fsync_cost(args.fsync_records, Path(tmp))
    print(f"| decision_log.fsync ({f['never']['bytes'] / 1024:.0f} KiB records, {args.fsync_records} each) "
          "| write + sync p50 (ms) | p99 (ms) | records/s |")
    print("|---|---:|---:|---:|")
    for policy, r in f.items():
        print(f"| {policy} | {r['p50_ms']:.3f} | {r['p99_ms']:.3f} | {r['records_per_s']:.0f} |")
    if args.fsync_only:
        return
    print()
    with tempfile.TemporaryDirectory() as tmp:
        p = in_process(args.rounds, Path(tmp))
        w = over_the_wire(args.wire_calls, Path(tmp))
        u = under_load(args.load_seconds, Path(tmp))
    print("| at 400 x 384, diversity on, sample_rate 1 | log off | log on | overhead |")
    print("|---|---:|---:|---:|")
    print(f"| handler thread CPU, median (ms) | {p['handler_off_ms']:.2f} | {p['handler_on_ms']:.2f} | "
          f"{pct(p['handler_on_ms'], p['handler_off_ms'])} |")
    print(f"| over the wire p50 (ms) | {w['p50_off_ms']:.2f} | {w['p50_on_ms']:.2f} | "
          f"{pct(w['p50_on_ms'], w['p50_off_ms'])} |")
    print(f"| over the wire p99 (ms) | {w['p99_off_ms']:.2f} | {w['p99_on_ms']:.2f} | "
          f"{pct(w['p99_on_ms'], w['p99_off_ms'])} |")
    print(f"| server process CPU per call (ms) | {w['server_cpu_off_ms']:.2f} | {w['server_cpu_on_ms']:.2f} | "
          f"{pct(w['server_cpu_on_ms'], w['server_cpu_off_ms'])} |")
    print(f"| log writer process CPU per call (ms) | – | {w['writer_cpu_ms']:.2f} | |")
    print(f"\ncapture (on the handler thread) {p['capture_ms']:.3f} ms; formatting one record (writer process) "
          f"{p['writer_ms']:.2f} ms; record size {p['record_bytes'] / 1024:.0f} KiB")
    print(f"under load (4 callers): {u['rps_off']:.1f} rps with the log off, {u['rps_tiny']:.1f} rps with "
          f"queue_size 1 ({pct(u['rps_tiny'], u['rps_off'])}); about {u['written']} of {u['calls']:.0f} records "
          "written, the rest dropped and counted")


def sinks(calls: int, url: str, endpoint: str | None) -> None:
    """Sink file against sink s3: the same request path (capture, queue); what differs is the writer's work."""
    with tempfile.TemporaryDirectory() as tmp:
        w = over_the_wire(calls, Path(tmp), off_env=file_env(Path(tmp)), on_env=s3_env(url, endpoint))
    print("| at 400 x 384, diversity on, sample_rate 1 | sink file | sink s3 | difference |")
    print("|---|---:|---:|---:|")
    for name, a, b in (("over the wire p50 (ms)", "p50_off_ms", "p50_on_ms"),
                       ("over the wire p99 (ms)", "p99_off_ms", "p99_on_ms"),
                       ("server process CPU per call (ms)", "server_cpu_off_ms", "server_cpu_on_ms")):
        print(f"| {name} | {w[a]:.2f} | {w[b]:.2f} | {pct(w[b], w[a])} |")
    print(f"| log writer process CPU per call (ms) | {w['writer_cpu_off_ms']:.2f} | {w['writer_cpu_ms']:.2f} | "
          f"{pct(w['writer_cpu_ms'], w['writer_cpu_off_ms'])} |")


if __name__ == "__main__":
    main()
