"""A real `memrank serve` subprocess on loopback, and raw-bytes callers for latency and throughput."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import grpc

from bench.timing import children, proc_cpu_seconds, proc_peak_rss_mib

RANK = "/memrank.v1.RankingService/Rank"
HEALTH = "/grpc.health.v1.Health/Check"


def _identity(b: bytes) -> bytes:
    return b


@dataclass
class Server:
    """A running `memrank serve` and its worker process ids."""

    popen: subprocess.Popen[bytes]
    port: int
    workers: int

    @property
    def pids(self) -> list[int]:
        """The processes doing the work (the workers, or the single server process)."""
        if self.workers == 1:
            return [self.popen.pid]
        # The spawned workers, not multiprocessing's resource tracker.
        return [p for p in children(self.popen.pid) if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes()]

    def cpu_seconds(self) -> float:
        """CPU seconds used so far by the serving processes."""
        return sum(proc_cpu_seconds(p) for p in self.pids)

    def peak_rss_mib(self) -> float:
        """Largest peak RSS among the serving processes, MiB."""
        return max(proc_peak_rss_mib(p) for p in self.pids)


def free_port() -> int:
    """A currently free loopback TCP port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve(workers: int, timeout: float = 60, env_extra: dict[str, str] | None = None) -> Iterator[Server]:
    """Run `memrank serve --workers N` on a free loopback port until the block ends (``env_extra``: MEMRANK_*)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMRANK_")} | (env_extra or {})
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "serve.log"
        with log.open("w") as handle:
            popen = subprocess.Popen(
                [sys.executable, "-m", "memrank.cli", "serve", "--address", f"127.0.0.1:{port}", "--metrics-port",
                 "0", "--workers", str(workers), "--log-level", "warning"],
                stdout=handle, stderr=subprocess.STDOUT, env=env)
            try:
                server = Server(popen, port, workers)
                _wait_ready(server, log, timeout)
                yield server
            finally:
                popen.send_signal(signal.SIGTERM)
                try:
                    popen.wait(30)
                except subprocess.TimeoutExpired:
                    popen.kill()
                    popen.wait()


def _wait_ready(server: Server, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    target = f"127.0.0.1:{server.port}"
    while time.monotonic() < deadline:
        if server.popen.poll() is not None:
            raise RuntimeError(f"memrank serve exited {server.popen.returncode}: {log.read_text()[-2000:]}")
        try:
            with Caller(target) as c:
                c.health()
            if server.workers == 1 or len(server.pids) == server.workers:
                time.sleep(0.2 if server.workers == 1 else 1.0)  # let every worker bind
                return
        except grpc.RpcError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"memrank serve did not become ready: {log.read_text()[-2000:]}")


class Caller:
    """A channel of its own (its own TCP connection) sending pre-serialised requests."""

    def __init__(self, target: str, max_bytes: int = 64 << 20) -> None:
        self.channel = grpc.insecure_channel(target, options=[
            ("grpc.use_local_subchannel_pool", 1), ("grpc.max_receive_message_length", max_bytes),
            ("grpc.max_send_message_length", max_bytes)])
        self._rank = self.channel.unary_unary(RANK, request_serializer=_identity, response_deserializer=_identity)
        self._health = self.channel.unary_unary(HEALTH, request_serializer=_identity,
                                                response_deserializer=_identity)

    def rank(self, data: bytes) -> bytes:
        """One Rank call; the response bytes."""
        return self._rank(data, timeout=60)  # type: ignore[no-any-return]

    def health(self) -> bytes:
        """One Health/Check call (an almost empty RPC)."""
        return self._health(b"", timeout=10)  # type: ignore[no-any-return]

    def __enter__(self) -> Caller:
        return self

    def __exit__(self, *exc: object) -> None:
        self.channel.close()


def throughput(target: str, data: bytes, seconds: float, concurrency: int) -> dict[str, float]:
    """Closed-loop load: ``concurrency`` threads, each on its own connection, for ``seconds``; requests/s."""
    counts = [0] * concurrency
    errors = [0] * concurrency
    stop = threading.Event()
    callers = [Caller(target) for _ in range(concurrency)]
    for c in callers:
        c.rank(data)  # connect and warm up before the clock starts

    def loop(k: int) -> None:
        while not stop.is_set():
            try:
                callers[k].rank(data)
                counts[k] += 1
            except grpc.RpcError:
                errors[k] += 1

    threads = [threading.Thread(target=loop, args=(k,)) for k in range(concurrency)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    for c in callers:
        c.channel.close()
    return {"rps": sum(counts) / elapsed, "requests": float(sum(counts)), "errors": float(sum(errors)),
            "seconds": elapsed}


def dump(obj: object) -> str:
    """Compact JSON (for logs)."""
    return json.dumps(obj, separators=(",", ":"))
