"""``python -m bench.client_e2e [--sizes 100,400,1600] [--reps N] [--clients python,go,ts,java]``: Rank end to end
through each shipped client, called as its users call it, against LangChain's in-process scoring + MMR on the same
batch, alternately in one run.

The Python client gets what the README's first call gives it: a dict of protobuf-JSON candidates, times as RFC 3339
strings, and a numpy embedding matrix. The Go, TypeScript and Java clients get their own types, through their
drivers (``bench.drivers``). A client's time is all of it: building the request from those values, packing the
matrix, the gRPC call to a one-worker ``memrank serve`` on loopback, and reading the response. Prints p50 of each
and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.baselines import langchain_available, langchain_rank
from bench.data import K, Workload, workload
from bench.drivers import DRIVERS, Driver, available, request_dict, workload_file
from bench.live import serve
from memrank.client import RankingClient


def _alternate(ours: Callable[[], float], theirs: Callable[[], object], reps: int) -> tuple[float, float]:
    """p50 seconds of ``ours`` (which times itself) and of ``theirs``, called alternately."""
    a: list[float] = []
    b: list[float] = []
    for _ in range(reps):
        a.append(ours())
        start = time.perf_counter()
        theirs()
        b.append(time.perf_counter() - start)
    return statistics.median(a), statistics.median(b)


def _python(client: RankingClient, data: dict[str, Any], w: Workload) -> Callable[[], float]:
    def call() -> float:
        start = time.perf_counter()
        client.rank(data, embeddings=w.embeddings)
        return time.perf_counter() - start
    return call


CLIENTS = ("python", *DRIVERS)
WARM = 400  # untimed calls per client and size: the JVM's JIT settles after 400-800 calls at 100 x 384 (a client
# in a long-lived service runs compiled); from 5 warm calls, Java's 100 x 384 p50 is 38 ms against 13 once settled


def measure(sizes: Sequence[int], reps: int, names: Sequence[str] = CLIENTS,
            log: Callable[[str], object] = print, warm: int = WARM) -> dict[str, dict[str, Any]]:
    """{client: {"NxD": {client_p50_ms, langchain_p50_ms, ratio}}} for each client whose toolchain is here (the
    others: {"skipped": why}), one 1-worker server for all, each client alternated with LangChain after ``warm``
    untimed calls per size."""
    out: dict[str, dict[str, Any]] = {}
    with serve(1) as server, RankingClient(f"127.0.0.1:{server.port}", timeout=30) as client, \
            tempfile.TemporaryDirectory() as tmp:
        for name in names:
            if name != "python" and not available(name):
                out[name] = {"skipped": f"{DRIVERS[name].needs} not on PATH"}
                continue
            out[name] = {}
            driver = None if name == "python" else Driver(name, f"127.0.0.1:{server.port}")
            try:
                for n in sizes:
                    w = workload(n, 384)
                    lc = langchain_rank(w, K)
                    if driver is None:
                        ours = _python(client, request_dict(w), w)
                    else:
                        driver.load(workload_file(w, Path(tmp) / f"{n}.json"))
                        ours = driver.rank
                    for _ in range(warm):  # a fresh size: the first calls (and a JIT's warm-up) are not the ones timed
                        ours()
                        lc()
                    a, b = _alternate(ours, lc, reps)
                    out[name][f"{n}x384"] = {"client_p50_ms": a * 1e3, "langchain_p50_ms": b * 1e3, "ratio": a / b}
                    log(f"{name:>7} {n:>6}x384 {a * 1e3:>14.2f} {b * 1e3:>17.2f} {a / b:>6.2f}")
            finally:
                if driver is not None:
                    driver.__exit__(None, None, None)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,400,1600")
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--clients", default="python", help=f"comma-separated, of {','.join(CLIENTS)}")
    parser.add_argument("--warm", type=int, default=WARM,
                        help=f"untimed calls per client and size first (default {WARM}: a fresh JVM compiles for "
                             "several hundred calls; 5 shows a cold JVM)")
    parser.add_argument("--into", type=Path, help="a results.json whose 'clients' this run replaces")
    args = parser.parse_args()
    if not langchain_available():
        raise SystemExit("LangChain is not installed (pip install -e '.[bench]')")
    names = args.clients.split(",")
    if unknown := set(names) - set(CLIENTS):
        raise SystemExit(f"unknown clients {sorted(unknown)}; known: {','.join(CLIENTS)}")
    started, load = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), list(os.getloadavg())
    print(f"{'client':>7} {'size':>10} {'client p50 ms':>14} {'LangChain p50 ms':>17} {'ratio':>6}")
    results = measure([int(s) for s in args.sizes.split(",")], args.reps, names,
                      lambda line: print(line, flush=True), args.warm)
    for name, rows in results.items():
        if "skipped" in rows:
            print(f"{name:>7}: skipped ({rows['skipped']})")
    if args.into is not None:
        data = json.loads(args.into.read_text())
        data["clients"] = results
        data["clients_run"] = {"started_utc": started, "load_average_at_start": load, "warm": args.warm,
                               "reps": args.reps, "command": "python -m bench.client_e2e " + " ".join(sys.argv[1:])}
        args.into.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
        print(f"wrote clients into {args.into}")


if __name__ == "__main__":
    main()
