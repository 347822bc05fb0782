"""Timing helpers: repeated wall and CPU time, quantiles, this process's and other processes' memory."""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Timing:
    """Per-call wall-clock and thread CPU samples (seconds), and the process CPU seconds of all calls."""

    wall: tuple[float, ...]
    cpu: float
    thread: tuple[float, ...] = ()

    @property
    def cpu_p50(self) -> float:
        """Median CPU time of one call in this thread, milliseconds (robust to other load on the machine)."""
        return float(np.percentile(self.thread, 50)) * 1e3 if self.thread else self.p50

    @property
    def p50(self) -> float:
        """Median wall time in milliseconds."""
        return float(np.percentile(self.wall, 50)) * 1e3

    @property
    def p99(self) -> float:
        """99th percentile wall time in milliseconds."""
        return float(np.percentile(self.wall, 99)) * 1e3

    @property
    def cpu_per_call(self) -> float:
        """CPU milliseconds per call."""
        return self.cpu / len(self.wall) * 1e3


def measure(fn: Callable[[], object], reps: int, warmup: int = 1) -> Timing:
    """Run fn warmup + reps times; the wall time of each measured call and their CPU total."""
    for _ in range(warmup):
        fn()
    wall, thread = [], []
    cpu0 = time.process_time()
    for _ in range(reps):
        c0, t0 = time.thread_time(), time.perf_counter()
        fn()
        wall.append(time.perf_counter() - t0)
        thread.append(time.thread_time() - c0)
    return Timing(tuple(wall), time.process_time() - cpu0, tuple(thread))


def measure_pair(a: Callable[[], object], b: Callable[[], object], reps: int) -> tuple[Timing, Timing]:
    """Measure a and b alternately (a b a b ...), so both see the same load on a shared machine."""
    a()
    b()
    ta, tb = [measure(a, 1, warmup=0)], [measure(b, 1, warmup=0)]
    for _ in range(reps - 1):
        ta.append(measure(a, 1, warmup=0))
        tb.append(measure(b, 1, warmup=0))
    return _merge(ta), _merge(tb)


def _merge(ts: list[Timing]) -> Timing:
    return Timing(tuple(w for t in ts for w in t.wall), sum(t.cpu for t in ts),
                  tuple(c for t in ts for c in t.thread))


def peak_rss_mib() -> float:
    """Peak resident set size of this process, MiB (Linux ru_maxrss is in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def proc_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_peak_rss_mib(pid: int) -> float:
    """Peak resident set size (VmHWM) of a live process, MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def children(pid: int) -> list[int]:
    """Direct child process ids (from /proc)."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        out.extend(int(x) for x in text)
    return out
