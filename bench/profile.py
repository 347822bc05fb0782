"""``python -m bench.profile``: where a live server's CPU goes per Rank call (py-spy, native frames, per thread).

Starts ``memrank serve --workers 1`` on loopback (``bench.live``), drives it with one client thread sending the
400 x 384 packed request (``bench.data``) call after call, and meanwhile:

1. reads the server's CPU per call from /proc (no profiler attached), split by thread;
2. records it with ``py-spy record --native --threads --format raw`` and sorts every sample into a component
   (``COMPONENTS``: the first rule whose text appears in the stack wins), giving each component's share of the
   sampled CPU and its ms per call (share x the unprofiled CPU per call);
3. with ``--svg``, records a flame graph too (a second recording: py-spy writes one format per run).

Needs ``pip install py-spy`` and ptrace rights over the server (root, or ``kernel.yama.ptrace_scope`` 0).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

from bench import live
from bench.data import workload

# (component, thread, texts): a sample belongs to the first component whose thread name starts with ``thread`` ("" =
# any) and one of whose texts is in its stack (frames joined by ";", leaf last). Order matters: the receipt inside
# encoding, the column reads inside validation, the metrics hand-off inside the handler, ...
COMPONENTS: list[tuple[str, str, tuple[str, ...]]] = [
    ("receipt (canonical bytes + SHA-256)", "",
     ("explain/receipt.py", "explain/canonical_values.py", "receipt_payload")),
    ("columns: candidate field reads (api/request_columns.py, columnar_candidates.py)", "",
     ("api/request_columns.py", "api/columnar_candidates.py")),
    ("validation rules (api/validate.py, candidate_rules.py)", "", ("api/validate.py", "api/candidate_rules.py")),
    ("signals (core/signals, core/scoring, core/text)", "", ("core/signals/", "core/scoring/", "core/text/")),
    ("selection + stages (core/selection, pipeline)", "", ("core/selection/", "core/pipeline.py",
                                                           "core/explain/", "core/reasons.py")),
    ("response building (api/encode.py)", "", ("api/encode.py",)),
    ("metrics: AfterReply.record in the handler (a queue put until 7586761, recording since)", "",
     ("AfterReply.record",)),
    ("metrics: recorder thread (until 7586761)", "memrank-metrics", ("",)),
    ("request/response freed (upb arenas)", "memrank-rpc", ("PyUpb_Message_Dealloc", "upb_Arena_Free")),
    ("request parse (upb decode)", "memrank-rpc", ("upb_Decode", "_upb_Decoder", "FromString")),
    ("response serialise (upb encode)", "memrank-rpc", ("upb_Encode", "SerializeToString")),
    ("handler rest (service.py, server._handle, call context)", "", ("grpc/service.py", "grpc/server.py")),
    ("handler pool hand-off (concurrent.futures, wake-ups)", "memrank-rpc", ("",)),
    ("event loop: asyncio + grpc.aio + intake", "memrank-grpc-loop", ("",)),
    ("gRPC poller thread", "Thread", ("_poll_wrapper",)),
]
OTHER = "other (interpreter, unattributed native frames)"
NATIVE = "gRPC core C threads (no Python frames; /proc)"


def classify(thread: str, stack: str) -> str:
    """The component of one collapsed stack of the named thread."""
    for name, prefix, texts in COMPONENTS:
        if thread.startswith(prefix) and any(t in stack for t in texts):
            return name
    return OTHER


IDLE = ("epoll_wait", "pthread_cond_timedwait", "pthread_cond_wait", "PyThread_acquire_lock_timed", "take_gil",
        "sem_wait", "sem_timedwait", "__poll", "nanosleep")


def thread_cpu(pid: int) -> dict[int, tuple[str, float]]:
    """(OS thread name, CPU seconds) of every thread of a process, by thread id."""
    out: dict[int, tuple[str, float]] = {}
    tck = os.sysconf("SC_CLK_TCK")
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        out[int(task.name)] = (name, (int(fields[11]) + int(fields[12])) / tck)
    return out


class Driver:
    """One client thread calling Rank back to back until stopped; counts the calls."""

    def __init__(self, target: str, data: bytes) -> None:
        self.calls = 0
        self._stop = threading.Event()
        self._caller = live.Caller(target)
        for _ in range(20):
            self._caller.rank(data)  # connect, warm up
        self._thread = threading.Thread(target=self._loop, args=(data,), daemon=True)
        self._thread.start()

    def _loop(self, data: bytes) -> None:
        while not self._stop.is_set():
            self._caller.rank(data)
            self.calls += 1

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._caller.channel.close()


def measure_cpu(pid: int, driver: Driver, seconds: float) -> tuple[dict[int, tuple[str, float]], int]:
    """CPU ms per call of every thread over ``seconds`` (no profiler attached), and the calls made."""
    before, calls0 = thread_cpu(pid), driver.calls
    time.sleep(seconds)
    after, calls = thread_cpu(pid), driver.calls - calls0
    return {tid: (name, (cpu - before.get(tid, (name, 0.0))[1]) * 1e3 / calls)
            for tid, (name, cpu) in after.items()}, calls


def record(pid: int, seconds: float, fmt: str, out: Path, rate: int) -> None:
    """py-spy record of the running server (native frames, one root per thread)."""
    subprocess.run(["py-spy", "record", "--native", "--threads", "-r", str(rate), "-d", str(int(seconds)),
                    "-p", str(pid), "--format", fmt, "-o", str(out)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def samples(raw: Path) -> dict[int, tuple[str, Counter[str]]]:
    """Busy samples per thread id: (Python thread name, samples per component); waiting stacks dropped."""
    out: dict[int, tuple[str, Counter[str]]] = {}
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        head = re.match(r"thread \((\d+)\): ([^;]*)", stack)
        if head is None or any(mark in stack for mark in IDLE):
            continue
        tid = int(head.group(1))
        out.setdefault(tid, (head.group(2), Counter()))[1][classify(head.group(2), stack)] += int(n)
    return out


def attribute(cpu: dict[int, tuple[str, float]],
              busy: dict[int, tuple[str, Counter[str]]]) -> tuple[dict[str, float], dict[str, float]]:
    """(ms per call per component, ms per call per thread role): each thread's measured CPU split over its
    busy samples; a thread py-spy does not see (gRPC core's C threads) is a component of its own."""
    components: defaultdict[str, float] = defaultdict(float)
    roles: defaultdict[str, float] = defaultdict(float)
    for tid, (comm, ms) in cpu.items():
        if ms <= 0:
            continue
        name, counts = busy.get(tid, (f"{comm} (C thread)", Counter()))
        roles[re.sub(r"_\d+$|-\d+ ", " ", name)] += ms
        total = sum(counts.values())
        if not total:
            components[NATIVE if tid not in busy else OTHER] += ms
            continue
        for component, n in counts.items():
            components[component] += ms * n / total
    return dict(components), dict(roles)


def main(argv: list[str] | None = None) -> int:
    """Run it; print the table."""
    p = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=400)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--seconds", type=float, default=20.0, help="per measurement and per recording")
    p.add_argument("--rate", type=int, default=200, help="py-spy samples per second")
    p.add_argument("--raw", type=Path, help="keep the raw (collapsed) stacks here")
    p.add_argument("--svg", type=Path, help="also record a flame graph here")
    p.add_argument("--analyse", action="store_true", help="only re-read --raw (and the CPU saved beside it)")
    a = p.parse_args(argv)
    data = workload(a.n, a.dim).request.SerializeToString()
    raw = a.raw or Path(tempfile.mkdtemp()) / "profile.txt"
    saved = raw.with_suffix(".cpu.json")
    if a.analyse:
        kept = json.loads(saved.read_text())
        return report(a, len(data), kept["calls"], {int(k): tuple(v) for k, v in kept["cpu"].items()}, raw)
    with live.serve(1) as server:
        pid = server.popen.pid
        driver = Driver(f"127.0.0.1:{server.port}", data)
        try:
            time.sleep(2.0)
            cpu, calls = measure_cpu(pid, driver, a.seconds)
            record(pid, a.seconds, "raw", raw, a.rate)
            if a.svg is not None:
                record(pid, a.seconds, "flamegraph", a.svg, a.rate)
        finally:
            driver.stop()
    saved.write_text(json.dumps({"calls": calls, "cpu": cpu}))
    return report(a, len(data), calls, cpu, raw)


def report(a: argparse.Namespace, size: int, calls: int, cpu: dict[int, tuple[str, float]], raw: Path) -> int:
    """Print the per-thread and per-component CPU per call."""
    components, roles = attribute(cpu, samples(raw))
    total = sum(components.values())
    print(f"workload {a.n}x{a.dim}, request {size} bytes: {calls} sequential calls, "
          f"server CPU {total:.2f} ms per call (/proc, no profiler attached)")
    by_thread = sorted(roles.items(), key=lambda kv: -kv[1])
    print("by thread (ms per call): " + ", ".join(f"{k} {v:.2f}" for k, v in by_thread if v >= 0.005))
    print("\n| component | ms per call | share |\n|---|---:|---:|")
    for name, ms in sorted(components.items(), key=lambda kv: -kv[1]):
        print(f"| {name} | {ms:.2f} | {ms / total:.1%} |")
    print(f"| **total** | **{total:.2f}** | 100% |")
    named = total - components.get(OTHER, 0.0)
    print(f"\nattributed to a named component: {named / total:.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
