"""Running memrank as a process: one server, or a supervisor of worker processes sharing the port.

``serve`` decides; ``serve_single`` runs one server until SIGTERM/SIGINT, drains it and ends the process;
``_supervise`` starts the workers (SO_REUSEPORT), restarts any that die, serves their summed metrics, and
passes the signal on. Each worker records metrics into the supervisor's multiprocess directory: it says so
to ``create_server`` (``multiprocess_metrics``); nothing below reads the environment to find out.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import queue
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from types import FrameType
from typing import Any

from memrank import ports
from memrank.config import ServerSettings, Settings, SettingsSource
from memrank.core.errors import ConfigError
from memrank.decisions.sink import LOCK_ENV as DECISION_LOCK_ENV
from memrank.grpc.preflight import check_start
from memrank.grpc.server import create_server
from memrank.logs import setup_logging
from memrank.metrics.http import serve_metrics
from memrank.metrics.registry import new_registry, worker_gone, workers_registry

log = logging.getLogger("memrank.server")


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


def call_address(address: str, port: int) -> str:
    """The host:port a client on this machine calls: a wildcard host (0.0.0.0, ::) becomes the loopback."""
    host = ports.host_port(address)[0]
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return ports.display(host, port)


def log_ready(settings: Settings, port: int, health_port: int = 0) -> None:
    """The "ready" line: the server answers now, at this address, and how to try it."""
    s, sec = settings.server, settings.security
    target = call_address(s.address, port)
    fields: dict[str, Any] = {"address": target, "port": port, "workers": s.workers,
                              "tls": bool(sec.tls_cert_file), "auth": bool(sec.auth_token_file),
                              "metrics": metrics_url(s)}
    if s.health_address:
        fields["health_address"] = call_address(s.health_address, health_port or ports.host_port(s.health_address)[1])
    if not sec.tls_cert_file and not sec.auth_token_file:
        fields["try"] = f"grpcurl -plaintext {target} list"
    log.info(f"ready: grpc on {target}", extra=fields)


def serve_single(settings: Settings, reuse_port: bool = False, with_metrics: bool = True,
                 exit_when_done: bool = True, metrics_endpoint: bool = True,
                 multiprocess_metrics: bool = False, on_serving: Callable[[int, int], None] | None = None) -> None:
    """Run one server process until SIGTERM/SIGINT, then drain and end the process (exit status 0);
    ``exit_when_done`` False: stop the listeners and return instead. ``metrics_endpoint`` False (a worker):
    metrics are recorded but served by the supervisor. The metrics port is bound before the gRPC one.
    ``on_serving(port, health_port)`` runs once the server answers; by default (one process) it logs "ready"."""
    registry = new_registry() if with_metrics else None
    exposition = serve_metrics(settings.server.metrics_host, settings.server.metrics_port, registry) \
        if registry is not None and metrics_endpoint else None
    try:
        running = create_server(settings, registry, reuse_port, multiprocess_metrics=multiprocess_metrics)
    except BaseException:
        if exposition is not None:
            exposition[0].server_close()
        raise
    log.info("serving", extra={"address": settings.server.address, "port": running.port, "pid": os.getpid(),
                               "tls": bool(settings.security.tls_cert_file),
                               "mtls": bool(settings.security.tls_client_ca_file),
                               "auth": bool(settings.security.auth_token_file), "health_port": running.health_port,
                               "inflight_budget_bytes": running.intake.budget.total,
                               "profiles": sorted(settings.profiles), "policy_version": settings.policy_version})
    if on_serving is None:
        log_ready(settings, running.port, running.health_port)
    else:
        on_serving(running.port, running.health_port)
    signum = _wait_for_signal()
    log.info("draining", extra={"signal": signal.Signals(signum).name,
                                "grace_seconds": settings.server.grace_period_seconds})
    running.stop(settings.server.grace_period_seconds, exiting=exit_when_done)
    if exposition is not None:
        exposition[0].shutdown()
    log.info("stopped", extra={"pid": os.getpid()})
    if exit_when_done:
        # The listeners close with the process (see Running.stop): grpc's shutdown is not run.
        logging.shutdown()
        sys.stdout.flush()
        os._exit(0)


PARENT_POLL_SECONDS = 0.25  # a worker notices a dead supervisor this fast, then drains as on SIGTERM


def _follow_parent(parent: int) -> None:
    """SIGTERM this worker once its supervisor is gone (killed with -9 it can tell no one): a worker never
    outlives it and keeps the port the next server binds."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_SECONDS)
        log.warning("supervisor gone; draining", extra={"supervisor": parent, "pid": os.getpid()})
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="memrank-parent-watch", daemon=True).start()


def _worker_main(source: SettingsSource, index: int, parent: int, workers: int,
                 ready: multiprocessing.queues.Queue[int] | None = None) -> None:
    settings = source.load()
    settings = replace(settings, server=replace(settings.server, workers=workers))
    setup_logging(settings.server.log_level)
    log.info("worker starting", extra={"worker": index, "pid": os.getpid(),
                                       "metrics": f"served by the supervisor ({metrics_url(settings.server)})"})
    _follow_parent(parent)
    serve_single(settings, reuse_port=True, with_metrics=True, metrics_endpoint=False, multiprocess_metrics=True,
                 on_serving=lambda *_: ready.put(index) if ready is not None else None)


def metrics_url(s: ServerSettings) -> str:
    """Where /metrics is served, or "off"."""
    return f"http://{ports.display(s.metrics_host, s.metrics_port)}/metrics" if s.metrics_port else "off"


METRICS_DIR_PREFIX = "memrank-metrics-"


def _clean_stale_metrics_dirs() -> None:
    """Remove the metrics directories of supervisors that died without cleaning up (kill -9)."""
    root = tempfile.gettempdir()
    for name in os.listdir(root):
        owner = name[len(METRICS_DIR_PREFIX):].split("-", 1)[0]
        if not name.startswith(METRICS_DIR_PREFIX) or not owner.isdigit():
            continue
        try:
            os.kill(int(owner), 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
            log.info("removed a dead server's metrics directory", extra={"path": os.path.join(root, name)})
        except PermissionError:
            pass  # alive, another user's


def worker_count(settings: Settings) -> int:
    """server.workers, with 0 (auto) resolved: one per CPU this process may run on, 1 on an OS-picked port;
    more than the CPUs are clamped to them, with a warning."""
    cpus = len(os.sched_getaffinity(0))
    asked = settings.server.workers
    if asked > cpus:  # more would only take turns on the CPUs, each holding its own memory
        log.warning("server.workers is above the CPUs this process may run on; running one worker per CPU",
                    extra={"workers_asked": asked, "cpus": cpus, "workers": cpus})
        return cpus
    if asked:
        return asked
    if settings.server.address.rpartition(":")[2] == "0":
        return 1  # a port the OS picks cannot be shared: each worker would get its own
    return max(1, min(64, cpus))


def serve(settings: Settings, source: SettingsSource) -> None:
    """Serve with server.workers processes (one in-process server when it resolves to 1)."""
    check_start(settings)  # before any port or worker: a worker failing at start would be restarted forever
    workers = worker_count(settings)
    if settings.server.workers == 0:
        log.info("workers: auto", extra={"workers": workers, "cpus": len(os.sched_getaffinity(0))})
    settings = replace(settings, server=replace(settings.server, workers=workers))
    if workers == 1:
        for key, address in _listen_addresses(settings):
            ports.check_free(key, address)  # grpc would refuse too (no SO_REUSEPORT), with a log line of its own
        serve_single(settings)
        return
    if settings.server.address.rpartition(":")[2] == "0":
        raise ConfigError("server.address: port 0 cannot be shared by several workers; name a port")
    _supervise(settings, source)


def _listen_addresses(settings: Settings) -> list[tuple[str, str]]:
    """(key, address) of each gRPC listener."""
    s = settings.server
    return [("server.address", s.address)] + ([("server.health_address", s.health_address)]
                                              if s.health_address else [])


def _supervise(settings: Settings, source: SettingsSource) -> None:
    """Start N workers sharing the port (SO_REUSEPORT), restart any that die, drain all on a signal.

    Before any worker starts: the ports are refused if another process holds them, then held for our
    workers only (see memrank.ports), and the metrics port is bound; a failure ends the start with
    nothing left running.
    """
    holds = [sock for key, address in _listen_addresses(settings) for sock in ports.claim(key, address)]
    # Workers write their samples to mmap files here; the supervisor's /metrics sums them
    # (counters, histograms) or takes the live maximum (drift gauges, multiprocess_mode livemax).
    _clean_stale_metrics_dirs()
    mp_dir = tempfile.mkdtemp(prefix=f"{METRICS_DIR_PREFIX}{os.getpid()}-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = mp_dir  # read by prometheus_client in the spawned workers
    # Workers' decision log writers take this lock around each line on a shared stdout (see decisions.sink).
    os.environ[DECISION_LOCK_ENV] = os.path.join(mp_dir, "decision-log.lock")
    registry = workers_registry(mp_dir)
    try:
        exposition = serve_metrics(settings.server.metrics_host, settings.server.metrics_port, registry)
    except BaseException:
        shutil.rmtree(mp_dir, ignore_errors=True)
        ports.release(holds)
        raise
    ctx = multiprocessing.get_context("spawn")
    procs: dict[int, multiprocessing.process.BaseProcess] = {}
    ready: multiprocessing.queues.Queue[int] = ctx.Queue()  # a worker puts its index once it serves

    def start(i: int) -> None:
        p = ctx.Process(target=_worker_main, args=(source, i, os.getpid(), settings.server.workers, ready),
                        name=f"memrank-worker-{i}")
        p.start()
        procs[i] = p

    for i in range(settings.server.workers):
        start(i)
    log.info("supervising", extra={"workers": settings.server.workers, "address": settings.server.address,
                                   "metrics_dir": mp_dir})
    stopping = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.set())
    serving: set[int] | None = set()  # None once "ready" is logged: every worker answered
    while not stopping.wait(0.5 if serving is None else 0.05):
        while True:
            try:
                index = ready.get_nowait()
            except queue.Empty:
                break
            if serving is not None:
                serving.add(index)
        if serving is not None and len(serving) >= settings.server.workers:
            log_ready(settings, ports.host_port(settings.server.address)[1])
            serving = None
        for i, p in list(procs.items()):
            if not p.is_alive():
                worker_gone(p.pid, mp_dir)
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
    ports.release(holds)
    shutil.rmtree(mp_dir, ignore_errors=True)
    log.info("stopped", extra={"workers": len(procs)})
