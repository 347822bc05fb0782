"""``python -m bench.malloc_ab``: a live server with glibc's malloc defaults next to one with memrank's settings.

Two 1-worker servers on loopback; one is started with ``memrank.system.defaults.apply`` replaced by a no-op (so
neither the BLAS default nor ``mallopt`` runs in it; OPENBLAS_NUM_THREADS=1 comes from the environment for
both), the other as ``memrank serve`` runs. Calls alternate, call for call; the table gives e2e p50 and the
server CPU per call (from /proc) of each. The evidence for the malloc decision in bench/README.md.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

from bench import live
from bench.data import workload
from bench.timing import measure_pair

_KEYS = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_ARENA_MAX")
_NO_SETTINGS = ("import sys; from memrank.system import defaults; defaults.apply = dict; "
                "from memrank.cli import main; sys.exit(main(sys.argv[1:]))")


def _start(settings: bool, log: Path) -> live.Server:
    port = live.free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMRANK_") and k not in _KEYS}
    env["OPENBLAS_NUM_THREADS"] = "1"
    entry = ["-m", "memrank.cli"] if settings else ["-c", _NO_SETTINGS]
    popen = subprocess.Popen([sys.executable, *entry, "serve", "--address", f"127.0.0.1:{port}", "--metrics-port",
                              "0", "--workers", "1", "--log-level", "warning"], env=env,
                             stdout=log.open("w"), stderr=subprocess.STDOUT)
    server = live.Server(popen, port, 1)
    live._wait_ready(server, log, 60)
    return server


def main() -> int:
    """Run both servers, print one row per workload."""
    with tempfile.TemporaryDirectory() as tmp:
        plain, tuned = _start(False, Path(tmp) / "plain.log"), _start(True, Path(tmp) / "tuned.log")
        try:
            print("| workload | e2e p50 ms, glibc defaults | e2e p50 ms, memrank settings | ratio "
                  "| server CPU ms/call, defaults | server CPU ms/call, settings | ratio |")
            print("|---|---:|---:|---:|---:|---:|---:|")
            for n, dim, reps in ((400, 0, 150), (400, 384, 150), (1600, 384, 60)):
                data = workload(n, dim).request.SerializeToString()
                with live.Caller(f"127.0.0.1:{plain.port}") as a, live.Caller(f"127.0.0.1:{tuned.port}") as b:
                    for _ in range(5):
                        a.rank(data)
                        b.rank(data)
                    cpu_a, cpu_b = plain.cpu_seconds(), tuned.cpu_seconds()
                    ta, tb = measure_pair(partial(a.rank, data), partial(b.rank, data), reps)
                    cpu_a = (plain.cpu_seconds() - cpu_a) / reps * 1e3
                    cpu_b = (tuned.cpu_seconds() - cpu_b) / reps * 1e3
                print(f"| {n} x {dim} | {ta.p50:.2f} | {tb.p50:.2f} | {tb.p50 / ta.p50:.2f} | {cpu_a:.2f} "
                      f"| {cpu_b:.2f} | {cpu_b / cpu_a:.2f} |")
        finally:
            for s in (plain, tuned):
                s.popen.send_signal(signal.SIGTERM)
                s.popen.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
