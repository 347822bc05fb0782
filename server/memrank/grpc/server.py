"""The gRPC server: service + health + reflection, graceful shutdown, worker processes."""

from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
import signal
import tempfile
import threading
import time
from concurrent import futures
from dataclasses import dataclass, replace
from types import FrameType

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import CollectorRegistry

from memrank._gen.v1 import ranking_service_pb2 as svc_pb
from memrank._gen.v1 import ranking_service_pb2_grpc as pb_grpc
from memrank.config import Settings, SettingsSource
from memrank.core.errors import ConfigError
from memrank.grpc.service import RankingService
from memrank.logs import setup_logging
from memrank.metrics.declare import Metrics
from memrank.metrics.http import serve_metrics

log = logging.getLogger("memrank.server")
SERVICE_NAME = svc_pb.DESCRIPTOR.services_by_name["RankingService"].full_name


@dataclass
class Running:
    """A started server and what is needed to stop it."""

    server: grpc.Server
    port: int
    health: health.HealthServicer

    def stop(self, grace: float) -> None:
        """Flip health to NOT_SERVING, stop accepting, give in-flight calls ``grace`` seconds."""
        self.health.enter_graceful_shutdown()
        self.server.stop(grace).wait()


def create_server(settings: Settings, registry: CollectorRegistry | None = None, reuse_port: bool = False) -> Running:
    """Build and start a server on settings.server.address (port 0 picks a free port)."""
    s = settings.server
    options = [
        ("grpc.max_receive_message_length", s.max_message_bytes),
        ("grpc.max_send_message_length", s.max_message_bytes),
        # Explicit: two servers never share a port by accident, only workers that ask for it.
        ("grpc.so_reuseport", 1 if reuse_port else 0),
    ]
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=s.thread_pool_size, thread_name_prefix="memrank-rpc"),
        options=options, maximum_concurrent_rpcs=s.max_concurrent_rpcs,
    )
    metrics = Metrics(registry if registry is not None else CollectorRegistry())
    pb_grpc.add_RankingServiceServicer_to_server(RankingService(settings, metrics), server)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME), server
    )
    port = server.add_insecure_port(s.address)
    if port == 0:
        raise ConfigError(f"server.address: cannot bind {s.address!r} (in use or not a local address)")
    server.start()
    for name in ("", SERVICE_NAME):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    return Running(server, port, health_servicer)


def _wait_for_signal() -> int:
    """Block until SIGTERM or SIGINT; return the signal number."""
    got: list[int] = []
    done = threading.Event()

    def handler(signum: int, _frame: FrameType | None) -> None:
        got.append(signum)
        done.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, handler)
    done.wait()
    return got[0]


def serve_single(settings: Settings, reuse_port: bool = False, with_metrics: bool = True) -> None:
    """Run one server process until SIGTERM/SIGINT, then drain and return."""
    registry = CollectorRegistry() if with_metrics else None
    running = create_server(settings, registry, reuse_port)
    exposition = serve_metrics(settings.server.metrics_address, settings.server.metrics_port, registry) \
        if registry is not None else None
    log.info("serving", extra={"address": settings.server.address, "port": running.port, "pid": os.getpid(),
                               "profiles": sorted(settings.profiles), "policy_version": settings.policy_version})
    signum = _wait_for_signal()
    log.info("draining", extra={"signal": signal.Signals(signum).name,
                                "grace_seconds": settings.server.grace_period_seconds})
    running.stop(settings.server.grace_period_seconds)
    if exposition is not None:
        exposition[0].shutdown()
    log.info("stopped", extra={"pid": os.getpid()})


def _worker_main(source: SettingsSource, index: int) -> None:
    settings = source.load()
    settings = replace(settings, server=replace(settings.server, metrics_port=0))
    setup_logging(settings.server.log_level)
    log.info("worker starting", extra={"worker": index, "pid": os.getpid()})
    serve_single(settings, reuse_port=True, with_metrics=True)


def serve(settings: Settings, source: SettingsSource) -> None:
    """Serve with settings.server.workers processes (one in-process server when workers = 1)."""
    if settings.server.workers == 1:
        serve_single(settings)
        return
    if settings.server.address.rpartition(":")[2] == "0":
        raise ConfigError("server.address: port 0 cannot be shared by several workers; name a port")
    _supervise(settings, source)


def _supervise(settings: Settings, source: SettingsSource) -> None:
    """Start N workers sharing the port (SO_REUSEPORT), restart any that die, drain all on a signal."""
    from prometheus_client import multiprocess

    # Workers write their samples to mmap files here; the supervisor's /metrics sums them
    # (counters, histograms) or takes the live maximum (drift gauges, multiprocess_mode livemax).
    mp_dir = tempfile.mkdtemp(prefix="memrank-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = mp_dir  # read by prometheus_client in the spawned workers
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=mp_dir)
    ctx = multiprocessing.get_context("spawn")
    procs: dict[int, multiprocessing.process.BaseProcess] = {}

    def start(i: int) -> None:
        p = ctx.Process(target=_worker_main, args=(source, i), name=f"memrank-worker-{i}")
        p.start()
        procs[i] = p

    for i in range(settings.server.workers):
        start(i)
    exposition = serve_metrics(settings.server.metrics_address, settings.server.metrics_port, registry)
    log.info("supervising", extra={"workers": settings.server.workers, "address": settings.server.address,
                                   "metrics_dir": mp_dir})
    stopping = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.set())
    while not stopping.wait(0.5):
        for i, p in list(procs.items()):
            if not p.is_alive():
                multiprocess.mark_process_dead(p.pid, mp_dir)
                log.error("worker died; restarting", extra={"worker": i, "pid": p.pid, "exitcode": p.exitcode})
                start(i)
    for p in procs.values():
        if p.pid is not None and p.is_alive():
            os.kill(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + settings.server.grace_period_seconds + 5
    for p in procs.values():
        p.join(max(0.0, deadline - time.monotonic()))
    if exposition is not None:
        exposition[0].shutdown()
    shutil.rmtree(mp_dir, ignore_errors=True)
    log.info("stopped", extra={"workers": len(procs)})
