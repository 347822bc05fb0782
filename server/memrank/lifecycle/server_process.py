"""One server process: started, announced, reloading its profiles on SIGHUP or a changed config file, until
SIGTERM/SIGINT, then drained; the process then ends (a worker of a supervisor, or the only server)."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType

from memrank.config import Settings, SettingsSource
from memrank.grpc.server import create_server
from memrank.lifecycle.announce import log_ready
from memrank.lifecycle.reload import ProfileReloader, start_reloader
from memrank.metrics.http import serve_metrics
from memrank.metrics.registry import new_registry
from memrank.system import signals

log = logging.getLogger("memrank.server")
SIGNAL_POLL_SECONDS = 0.05  # how often the main thread looks for a stop signal (a signal also ends the sleep)


def _handle_signals(reloader: ProfileReloader | None = None) -> list[int]:
    """Install the SIGTERM/SIGINT and SIGHUP handlers, then release the signals held since the process began
    (``memrank.system.signals``; one that came meanwhile is handled now): the list the stop signals go to.
    SIGHUP reloads the profiles (on a thread of its own: a signal handler does no work).

    The handlers only append to a list, and the main thread looks at it between short sleeps (a signal cuts a
    sleep short): a handler that set a ``threading.Event`` deadlocked the worker forever when a second signal
    came while the first handler was inside ``Event.set`` (SIGTERM from the supervisor and, say, SIGINT from a
    terminal's Ctrl-C or ``timeout`` signalling the whole process group), because the Event's lock is not
    reentrant."""
    got: list[int] = []

    def handler(signum: int, _frame: FrameType | None) -> None:
        got.append(signum)

    def hangup(_signum: int, _frame: FrameType | None) -> None:
        if reloader is not None:
            threading.Thread(target=reloader.reload, args=("SIGHUP",), name="memrank-reload", daemon=True).start()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, handler)
    signal.signal(signal.SIGHUP, hangup)
    signals.release()
    return got


def _wait_for_signal(got: list[int]) -> int:
    """Block until a stop signal is in ``got``; return its number."""
    while not got:
        time.sleep(SIGNAL_POLL_SECONDS)
    return got[0]


def serve_single(settings: Settings, reuse_port: bool = False, with_metrics: bool = True,
                 exit_when_done: bool = True, metrics_endpoint: bool = True,
                 worker_metrics_dir: str | None = None, on_serving: Callable[[int, int], None] | None = None,
                 source: SettingsSource | None = None) -> None:
    """Run one server process until SIGTERM/SIGINT, then drain and end the process (exit status 0);
    ``exit_when_done`` False: stop the listeners and return instead. ``metrics_endpoint`` False (a worker):
    metrics are recorded into ``worker_metrics_dir`` and served by the supervisor. The metrics port is bound
    before the gRPC one.
    ``on_serving(port, health_port)`` runs once the server answers; by default (one process) it logs "ready"."""
    registry = new_registry() if with_metrics else None
    exposition = serve_metrics(settings.server.metrics_host, settings.server.metrics_port, registry) \
        if registry is not None and metrics_endpoint else None
    try:
        running = create_server(settings, registry, reuse_port, worker_metrics_dir=worker_metrics_dir)
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
    reloader = start_reloader(running, source, settings)
    stops = _handle_signals(reloader)  # before "ready": a SIGTERM any time after it drains (issue #41)
    if on_serving is None:
        log_ready(settings, running.port, running.health_port)
    else:
        on_serving(running.port, running.health_port)
    signum = _wait_for_signal(stops)
    if reloader is not None:
        reloader.close()
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
