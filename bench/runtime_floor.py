"""``python -m bench.runtime_floor``: what the gRPC runtime alone costs per call, with no memrank code in it.

A server answers a fixed 20 KB response to the bench's request bytes (400 x 384 packed by default, 746 KB), in two
forms: grpc's sync server (the handler on its thread pool) and grpc.aio with the handler handed to a thread pool,
as memrank's intake does. Each form runs in a fresh process, twice, alternately; the client sends sequential calls
over one channel. It prints the server process's CPU per call (from /proc) and the client's p50.

This is the part of an end-to-end Rank no handler change can remove: issue 31's end-to-end ratios against an
in-process peer carry it on top of the handler.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from concurrent import futures

import grpc

from bench.data import workload
from bench.live import free_port

RESPONSE = b"x" * 20_000


def _handlers(handler: object) -> list[grpc.GenericRpcHandler]:
    return [grpc.method_handlers_generic_handler("t.S", {"M": grpc.unary_unary_rpc_method_handler(handler)})]


def _serve_sync(port: int) -> None:
    server = grpc.server(futures.ThreadPoolExecutor(8), options=[("grpc.max_receive_message_length", 64 << 20)])
    server.add_generic_rpc_handlers(_handlers(lambda _req, _ctx: RESPONSE))
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    server.wait_for_termination()


def _serve_aio(port: int) -> None:
    pool = futures.ThreadPoolExecutor(8)

    async def handler(_req: bytes, _ctx: object) -> bytes:
        return await asyncio.get_running_loop().run_in_executor(pool, lambda: RESPONSE)

    async def main() -> None:
        server = grpc.aio.server(options=[("grpc.max_receive_message_length", 64 << 20)])
        server.add_generic_rpc_handlers(_handlers(handler))
        server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        await server.wait_for_termination()

    asyncio.run(main())


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(") ", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(form: str, body: bytes, calls: int) -> tuple[float, float]:
    """(server CPU ms per call, client p50 ms) of one fresh server of this form."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "bench.runtime_floor", "--serve", form, "--port", str(port)])
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}",
                                   options=[("grpc.max_send_message_length", 64 << 20)]) as channel:
            grpc.channel_ready_future(channel).result(timeout=30)
            call = channel.unary_unary("/t.S/M")
            for _ in range(calls // 5):
                call(body)
            before = _cpu_seconds(proc.pid)
            latencies = []
            for _ in range(calls):
                start = time.perf_counter()
                call(body)
                latencies.append(time.perf_counter() - start)
            cpu = _cpu_seconds(proc.pid) - before
    finally:
        proc.kill()
        proc.wait()
    return cpu * 1e3 / calls, statistics.median(latencies) * 1e3


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.runtime_floor", description=__doc__.split("\n\n")[0])
    p.add_argument("--candidates", type=int, default=400)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--calls", type=int, default=1000, help="sequential calls per server (default 1000)")
    p.add_argument("--serve", choices=("sync", "aio"), help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.serve:
        (_serve_sync if a.serve == "sync" else _serve_aio)(a.port)
        return
    body = workload(a.candidates, a.dim).request.SerializeToString()
    print(f"request {len(body)} bytes ({a.candidates} x {a.dim}), response {len(RESPONSE)} bytes, {a.calls} calls")
    for form in ("sync", "aio", "sync", "aio"):
        cpu, p50 = measure(form, body, a.calls)
        print(f"{form:5s} server CPU {cpu:.3f} ms per call, client p50 {p50:.3f} ms")


if __name__ == "__main__":
    main()
