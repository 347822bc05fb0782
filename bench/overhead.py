"""``python -m bench.overhead [--sizes 100,400] [--rounds 12] [--calls 30] [--beside]``: a live server's CPU per
Rank call over the handler's CPU, both measured in one run, alternately.

A one-worker ``memrank serve`` on loopback answers blocks of sequential calls of the bench's pre-built request
bytes (``workload(n, 384).request``, as ``bench.live``'s latency loop sends); between them, blocks of the same bytes
are handled in this process as ``python -m bench`` times the handler (parsed as the server parses, ranked,
serialised). Both see the same load on the machine, round after round (the order reversed every other round).
Server CPU: every thread of the process, from ``/proc/<pid>/task/*/schedstat`` (nanoseconds, not clock ticks),
split into Python threads and gRPC core's own C threads; the handler's: this thread's CPU. The ratio is the
median over rounds of the two blocks' ratio.

``--beside``: a LangChain scoring + MMR call after every call of both, as ``bench.live`` alternates its latency
loop with LangChain: each call then starts with caches the other workload has used.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.baselines import langchain_available, langchain_rank
from bench.calls import rank_handler
from bench.data import K, workload
from bench.live import Caller, serve
from memrank.api.call import Call
from memrank.config import load_settings

_CORE_THREADS = ("event_engine", "grpc_global_tim", "default-executo", "resolver-execut")  # grpc's C threads


def threads_ns(pid: int) -> tuple[int, int]:
    """(Python threads, gRPC core threads) CPU nanoseconds so far of process ``pid``."""
    python = core = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            ns = int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError):  # the thread ended meanwhile
            continue
        if name.startswith(_CORE_THREADS):
            core += ns
        else:
            python += ns
    return python, core


def _block(call: Callable[[], object], beside: Callable[[], object], calls: int) -> list[float]:
    """Wall seconds of ``calls`` sequential calls, each followed by ``beside`` (untimed)."""
    wall = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        wall.append(time.perf_counter() - start)
        beside()
    return wall


def _local_block(call: Callable[[], object], beside: Callable[[], object], calls: int) -> float:
    """This thread's CPU milliseconds per call of ``calls`` sequential calls, each followed by ``beside``
    (which runs in this thread too, so it is left out)."""
    spent = 0
    for _ in range(calls):
        start = time.thread_time_ns()
        call()
        spent += time.thread_time_ns() - start
        beside()
    return spent / calls / 1e6


def measure(sizes: Sequence[int], rounds: int = 12, calls: int = 30, beside: bool = False,
            log: Callable[[str], object] = print) -> dict[str, dict[str, Any]]:
    """{"Nx384": {server_cpu_ms, core_threads_cpu_ms, handler_cpu_ms, ratio, server_p50_ms, rounds}}."""
    out: dict[str, dict[str, Any]] = {}
    handler = rank_handler(load_settings(env={}))
    with serve(1) as server, Caller(f"127.0.0.1:{server.port}") as caller:
        pid = server.popen.pid
        for n in sizes:
            w = workload(n, 384)
            data = w.request.SerializeToString()
            other: Callable[[], object] = langchain_rank(w, K) if beside and langchain_available() else lambda: None
            local = lambda d=data: handler(d, Call(0.0)).SerializeToString()  # noqa: E731
            remote = lambda d=data: caller.rank(d)  # noqa: E731
            _block(local, other, 50)
            _block(remote, other, 50)
            cpu: dict[str, list[float]] = {"server": [], "core": [], "handler": []}
            wall: list[float] = []
            for r in range(rounds):
                for name in ("handler", "server") if r % 2 == 0 else ("server", "handler"):
                    if name == "handler":
                        cpu["handler"].append(_local_block(local, other, calls))
                    else:
                        p0, k0 = threads_ns(pid)
                        wall += _block(remote, other, calls)
                        p1, k1 = threads_ns(pid)
                        cpu["server"].append((p1 - p0 + k1 - k0) / calls / 1e6)
                        cpu["core"].append((k1 - k0) / calls / 1e6)
            ratio = statistics.median(s / h for s, h in zip(cpu["server"], cpu["handler"], strict=True))
            out[f"{n}x384"] = {"server_cpu_ms": statistics.median(cpu["server"]),
                               "core_threads_cpu_ms": statistics.median(cpu["core"]),
                               "handler_cpu_ms": statistics.median(cpu["handler"]), "ratio": ratio,
                               "server_p50_ms": statistics.median(wall) * 1e3, "rounds": rounds, "calls": calls,
                               "beside_langchain": beside}
            e = out[f"{n}x384"]
            log(f"{n}x384: server {e['server_cpu_ms']:.2f} ms CPU per call (gRPC core threads "
                f"{e['core_threads_cpu_ms']:.2f}), handler {e['handler_cpu_ms']:.2f} ms, ratio {ratio:.3f}")
    return out


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.overhead", description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[100, 400])
    p.add_argument("--rounds", type=int, default=12)
    p.add_argument("--calls", type=int, default=30, help="sequential calls per block")
    p.add_argument("--beside", action="store_true", help="a LangChain call after every call (as bench.live)")
    a = p.parse_args(argv)
    measure(a.sizes, a.rounds, a.calls, a.beside)


if __name__ == "__main__":
    main()
