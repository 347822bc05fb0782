"""Running memrank as a process: one server, or a supervisor of worker processes sharing the port.

``serve`` decides; ``serve_single`` (``memrank.lifecycle.server_process``) runs one server until SIGTERM/SIGINT,
drains it and ends the process;
``_supervise`` starts the workers (SO_REUSEPORT), restarts any that die, serves their summed metrics, and
passes the signal on. Each worker records metrics into the supervisor's metrics directory: it is given the
directory and passes it to ``create_server`` (``worker_metrics_dir``); nothing below reads the environment to
find out.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import queue
import shutil
import signal
import tempfile
import threading
import time
from dataclasses import replace
from types import FrameType

from memrank.config import DECISION_LOG_LOCK_ENV, Settings, SettingsSource
from memrank.core.errors import ConfigError
from memrank.lifecycle.announce import log_ready, metrics_url
from memrank.lifecycle.preflight import check_start
from memrank.lifecycle.server_process import serve_single
from memrank.metrics.http import serve_metrics
from memrank.metrics.registry import worker_gone, workers_registry
from memrank.system import ports, signals
from memrank.system.logs import setup_logging

log = logging.getLogger("memrank.server")


# A worker dying this many times in a row, each time within this many seconds of its start, is not restarted
# again: the supervisor stops (exit 1) rather than loop (a start failure no check before the fork foresaw).
CRASH_LOOP_DEATHS, CRASH_LOOP_SECONDS = 3, 10.0


class WorkersFailing(Exception):
    """Workers keep dying as they start: restarting them again would loop forever."""


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


def _worker_main(source: SettingsSource, index: int, parent: int, workers: int, metrics_dir: str,
                 ready: multiprocessing.queues.Queue[int] | None = None) -> None:
    signals.hold()  # already held: the supervisor starts each worker with them held (serve_single releases them)
    settings = source.load()
    settings = replace(settings, server=replace(settings.server, workers=workers))
    setup_logging(settings.server.log_level)
    log.info("worker starting", extra={"worker": index, "pid": os.getpid(),
                                       "metrics": f"served by the supervisor ({metrics_url(settings.server)})"})
    _follow_parent(parent)
    serve_single(settings, reuse_port=True, with_metrics=True, metrics_endpoint=False,
                 worker_metrics_dir=metrics_dir, source=source,
                 on_serving=lambda *_: ready.put(index) if ready is not None else None)


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
        serve_single(settings, source=source)
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
    workers only (see memrank.system.ports), and the metrics port is bound; a failure ends the start with
    nothing left running.
    """
    holds = [sock for key, address in _listen_addresses(settings) for sock in ports.claim(key, address)]
    # Workers write their samples to mmap files here (prometheus_client's, and memrank's signal histogram);
    # the supervisor's /metrics sums them (counters, histograms) or takes the live maximum (drift gauges,
    # multiprocess_mode livemax).
    _clean_stale_metrics_dirs()
    mp_dir = tempfile.mkdtemp(prefix=f"{METRICS_DIR_PREFIX}{os.getpid()}-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = mp_dir  # read by prometheus_client in the spawned workers
    # Workers' decision log writers take this lock around each line on a shared stdout (see decisions.sink).
    os.environ[DECISION_LOG_LOCK_ENV] = os.path.join(mp_dir, "decision-log.lock")
    registry = workers_registry(mp_dir)
    try:
        exposition = serve_metrics(settings.server.metrics_host, settings.server.metrics_port, registry)
    except BaseException:
        shutil.rmtree(mp_dir, ignore_errors=True)
        ports.release(holds)
        raise
    ctx = multiprocessing.get_context("spawn")
    procs: dict[int, multiprocessing.process.BaseProcess] = {}
    started: dict[int, float] = {}
    quick_deaths: dict[int, int] = {}
    failing = ""
    ready: multiprocessing.queues.Queue[int] = ctx.Queue()  # a worker puts its index once it serves

    def start(i: int) -> None:
        p = ctx.Process(target=_worker_main, args=(source, i, os.getpid(), settings.server.workers, mp_dir, ready),
                        name=f"memrank-worker-{i}")
        with signals.held():  # the worker runs with them held from its first instruction to its handlers
            p.start()
        procs[i] = p
        started[i] = time.monotonic()

    for i in range(settings.server.workers):
        start(i)
    log.info("supervising", extra={"workers": settings.server.workers, "address": settings.server.address,
                                   "metrics_dir": mp_dir})
    # The signal handlers only append to a list (a handler that set a threading.Event could deadlock on its lock
    # when a second signal came while the first was inside Event.set); the loop reads it between short sleeps,
    # which a signal cuts short.
    got_signals: list[int] = []
    stopping = threading.Event()  # set by the loop only (also when workers keep dying)

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        got_signals.append(signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    signals.release()  # held since `memrank serve` began: one that came meanwhile is handled now
    serving: set[int] | None = set()  # None once "ready" is logged: every worker answered
    while not stopping.is_set():
        if not got_signals:
            time.sleep(0.1 if serving is None else 0.05)
        taken = len(got_signals)  # a signal arriving meanwhile stays for the next turn
        got = got_signals[:taken]
        del got_signals[:taken]
        if signal.SIGTERM in got or signal.SIGINT in got:
            stopping.set()
            break
        if got:  # SIGHUP: every worker reloads its profiles
            for p in procs.values():
                if p.pid is not None and p.is_alive():
                    os.kill(p.pid, signal.SIGHUP)
            log.info("SIGHUP passed to the workers", extra={"workers": len(procs)})
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
                if p.pid is not None:  # started, so always set: is_alive() of an unstarted process raises
                    worker_gone(p.pid, mp_dir)
                lived = time.monotonic() - started[i]
                quick_deaths[i] = quick_deaths.get(i, 0) + 1 if lived < CRASH_LOOP_SECONDS else 0
                if quick_deaths[i] >= CRASH_LOOP_DEATHS:
                    failing = (f"worker {i} died {quick_deaths[i]} times in a row within {CRASH_LOOP_SECONDS:g} s of "
                               f"its start (last exit code {p.exitcode}); stopping instead of restarting it again")
                    log.error("workers keep dying at start; stopping", extra={"worker": i, "exitcode": p.exitcode})
                    stopping.set()
                    break
                log.error("worker died; restarting", extra={"worker": i, "pid": p.pid, "exitcode": p.exitcode,
                                                             "lived_seconds": round(lived, 3)})
                start(i)
    for p in procs.values():
        if p.pid is not None and p.is_alive():
            os.kill(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + settings.server.grace_period_seconds + 5
    for p in procs.values():
        p.join(max(0.0, deadline - time.monotonic()))
    for p in procs.values():  # past the grace period: a worker still alive would keep this process from exiting
        if p.is_alive():
            log.error("worker did not stop within the grace period; killed",
                      extra={"pid": p.pid, "grace_seconds": settings.server.grace_period_seconds})
            p.kill()
            p.join(5)
    if exposition is not None:
        exposition[0].shutdown()
    ports.release(holds)
    shutil.rmtree(mp_dir, ignore_errors=True)
    log.info("stopped", extra={"workers": len(procs)})
    if failing:
        raise WorkersFailing(failing)
