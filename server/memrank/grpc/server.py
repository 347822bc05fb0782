"""The gRPC server: service + health + reflection, graceful shutdown, worker processes.

Each server runs on an asyncio event loop of its own thread (grpc.aio): the loop
reads requests and answers health and reflection itself, and RankingService work
runs on the handler pool behind the concurrency limit (see ``intake``), so no
caller can hold what health checks or other callers need.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, replace
from types import FrameType
from typing import Any, TypeVar

import grpc
from google.protobuf import descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import DecodeError, Message
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import CollectorRegistry, multiprocess

from memrank import ports
from memrank._gen.v1 import ranking_service_pb2 as svc_pb
from memrank._process import TRIM_AFTER_BYTES, release_freed_memory
from memrank.config import ServerSettings, Settings, SettingsSource
from memrank.core.errors import ConfigError, FieldViolation, InvalidRequest
from memrank.decisions.sink import LOCK_ENV as DECISION_LOCK_ENV
from memrank.grpc.auth import BearerAuthInterceptor, TokenFile, open_matcher
from memrank.grpc.errors import abort_with
from memrank.grpc.inflight import ByteBudget, auto_budget, memory_limit, memory_needed
from memrank.grpc.intake import CallContext, Handle, Intake
from memrank.grpc.service import RankingService
from memrank.grpc.tls import server_credentials
from memrank.grpc.tracing import Tracing, build_tracing, check_tracing
from memrank.grpc.wire import bad_utf8_field
from memrank.logs import setup_logging
from memrank.metrics.declare import Metrics
from memrank.metrics.http import serve_metrics
from memrank.metrics.recorder import FlushFirst

log = logging.getLogger("memrank.server")
SERVICE_NAME = svc_pb.DESCRIPTOR.services_by_name["RankingService"].full_name
T = TypeVar("T")


DRAIN_POLL_SECONDS = 0.02
ACCEPT_AFTER_NOT_SERVING_SECONDS = 0.5  # calls still taken after health turns NOT_SERVING


class _Loop:
    """An asyncio event loop running on its own thread; the servers of one Running live on it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="memrank-grpc-loop", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    @property
    def closed(self) -> bool:
        """True once close() ran."""
        return bool(self.loop.is_closed())

    def close(self) -> None:
        """Stop the loop and its thread."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


@dataclass
class Running:
    """A started server and what is needed to stop it."""

    server: grpc.aio.Server
    port: int
    health: health.aio.HealthServicer
    loop: _Loop
    intake: Intake
    health_server: grpc.aio.Server | None = None  # the plaintext health-only listener (server.health_address)
    health_port: int = 0
    service: RankingService | None = None
    tracing: Tracing | None = None

    def stop(self, grace: float, exiting: bool = False) -> None:
        """Drain, then stop. A second call does nothing.

        Health flips to NOT_SERVING; half a second later (a quarter of ``grace`` at most), every new
        RankingService call is refused with UNAVAILABLE (which clients retry), while the calls taken get up to
        ``grace`` seconds to be answered; then the decision log writes the record of
        every answered call and the queued spans are exported (tracing on, at most
        tracing.FLUSH_SECONDS). ``exiting`` (a ``memrank serve`` process, which ends
        right after): the listeners are left to the process's exit. grpc's own
        shutdown cancels the calls that reached it but were not yet taken, and their
        clients would see CANCELLED (grpc/grpc#41785); closed by the exit, their
        connections fail with UNAVAILABLE instead. In process (tests, embedding), the
        listeners are stopped with ``server.stop``.
        """
        if self.loop.closed:
            return
        deadline = time.monotonic() + grace
        self.loop.run(self.health.enter_graceful_shutdown())
        # Calls sent just before the signal may still be on their way in (grpc hands a busy server its calls a
        # little late): they are taken for a moment more, then every new one is refused.
        time.sleep(min(ACCEPT_AFTER_NOT_SERVING_SECONDS, grace / 4))
        self.intake.start_draining()
        while not self.intake.idle() and time.monotonic() < deadline:
            time.sleep(DRAIN_POLL_SECONDS)
        if not self.intake.idle():
            log.warning("grace period over with calls in flight", extra={"grace_seconds": grace})
        if self.service is not None:
            self.service.close()  # every answered call's decision record is written before the process ends
        if self.tracing is not None:
            self.tracing.shutdown()  # flushed here: a `memrank serve` process ends with os._exit, no atexit
        if exiting:
            return
        self.loop.run(self.server.stop(0))
        if self.health_server is not None:
            self.loop.run(self.health_server.stop(0))
        self.intake.close()
        self.loop.close()


def create_server(settings: Settings, registry: CollectorRegistry | None = None, reuse_port: bool = False,
                  tracing: Tracing | None = None) -> Running:
    """Build and start a server on settings.server.address (port 0 picks a free port).

    ``tracing``: given (tests: an in-memory exporter), else built from settings.tracing (None when off)."""
    s = settings.server
    registry = registry if registry is not None else CollectorRegistry()
    # One process: signal metrics are recorded after the reply, and a scrape first waits for them.
    # Workers of a supervisor record inline: the supervisor reads their files at any moment.
    after_reply = "PROMETHEUS_MULTIPROC_DIR" not in os.environ
    flush = FlushFirst()
    if after_reply:
        registry.register(flush)  # before every family, so it runs first
    metrics = Metrics(registry)
    tracing = tracing if tracing is not None else build_tracing(settings.tracing)
    service = RankingService(settings, metrics, after_reply=after_reply, tracing=tracing)
    flush.target = service.deferred
    intake = Intake(s.thread_pool_size, s.max_concurrent_rpcs, s.request_read_timeout_seconds, metrics.observe_call,
                    ByteBudget(inflight_budget(s)), tracing)
    loop = _Loop()
    try:
        running = loop.run(_start(settings, service, intake, loop, reuse_port))
    except BaseException:
        intake.close()
        service.close()
        if tracing is not None:
            tracing.shutdown()
        loop.close()
        raise
    running.tracing = tracing
    return running


async def _start(settings: Settings, service: RankingService, intake: Intake, loop: _Loop,
                 reuse_port: bool) -> Running:
    """Build, bind and start the listeners (on the loop: grpc.aio servers belong to the loop that makes them)."""
    s = settings.server
    server = grpc.aio.server(options=[*_message_options(s), *_connection_options(s, reuse_port)],
                             interceptors=_interceptors(settings))
    _add_ranking_service(service, intake, server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME), server,
        pool=_MethodAwarePool(descriptor_pool.Default()),
    )
    port = _bind(server, "server.address", s.address, server_credentials(settings.security), reuse_port)
    health_server, health_port = _health_listener(settings, health_servicer, reuse_port)
    await server.start()
    if health_server is not None:
        await health_server.start()
    for name in ("", SERVICE_NAME):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    return Running(server, port, health_servicer, loop, intake, health_server, health_port, service)


def inflight_budget(s: ServerSettings) -> int:
    """server.max_inflight_bytes, or (0) the budget the memory given to the process allows each worker; a warning
    when that memory cannot hold the workers at their budgets."""
    workers, limit = max(s.workers, 1), memory_limit()
    budget = s.max_inflight_bytes or auto_budget(limit, workers, s.max_message_bytes)
    need = memory_needed(workers, budget)
    if need > limit:
        log.warning("memory limit below what the workers may need: lower server.max_message_bytes or "
                    "server.max_inflight_bytes, or give more memory",
                    extra={"memory_limit_bytes": limit, "needed_bytes": need, "workers": workers,
                           "inflight_budget_bytes": budget, "max_message_bytes": s.max_message_bytes})
    return budget


def _message_options(s: ServerSettings) -> list[tuple[str, int]]:
    return [("grpc.max_receive_message_length", s.max_message_bytes),
            ("grpc.max_send_message_length", s.max_message_bytes)]


def _connection_options(s: ServerSettings, reuse_port: bool) -> list[tuple[str, int]]:
    """Channel arguments bounding what one client's connections can hold (grpc core's names)."""
    options = [
        # Explicit: two servers never share a port by accident, only workers that ask for it.
        ("grpc.so_reuseport", 1 if reuse_port else 0),
        ("grpc.max_concurrent_streams", s.max_streams_per_connection),
        ("grpc.keepalive_time_ms", _ms(s.keepalive_time_seconds)),
        ("grpc.keepalive_timeout_ms", _ms(s.keepalive_timeout_seconds)),
        # grpc 1.85 closes a connection whose ping goes unanswered after the ping timeout (1 min by
        # default), not after keepalive_timeout_ms alone.
        ("grpc.http2.ping_timeout_ms", _ms(s.keepalive_timeout_seconds)),
        # Ping connections without calls too (else only those with a call in flight are pinged). A
        # server's pings are not limited by grpc.http2.max_pings_without_data (a client setting).
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.max_connection_age_grace_ms", _ms(s.max_connection_age_grace_seconds)),
    ]
    if s.max_connection_idle_seconds > 0:
        options.append(("grpc.max_connection_idle_ms", _ms(s.max_connection_idle_seconds)))
    if s.max_connection_age_seconds > 0:
        options.append(("grpc.max_connection_age_ms", _ms(s.max_connection_age_seconds)))
    return options


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


class _MethodAwarePool:
    """The default descriptor pool, also finding the file of a method symbol ("pkg.Service.Method").

    upb's pool finds services and messages but not methods, so reflection answered
    "Symbol not found" to `grpcurl describe memrank.v1.RankingService.Rank` and to ghz.
    """

    def __init__(self, pool: descriptor_pool.DescriptorPool) -> None:
        self._pool = pool

    def FindFileContainingSymbol(self, symbol: str) -> Any:
        """The file of the symbol, or of the service holding the method."""
        try:
            return self._pool.FindFileContainingSymbol(symbol)
        except KeyError:
            return self._pool.FindMethodByName(symbol).containing_service.file

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pool, name)


def _handle(name: str, parse: Callable[[bytes], Message], method: Callable[[Message, Any], Message],
            descriptor: Descriptor) -> Handle:
    """Parse, call, serialise; request bytes that do not parse are INVALID_ARGUMENT with a field
    violation (grpc itself answers INTERNAL), naming the string field that is not UTF-8 when that is why."""
    def handle(holder: list[bytes], context: CallContext) -> bytes:
        data = holder.pop()
        try:
            request = parse(data)
        except DecodeError as exc:
            field = bad_utf8_field(data, descriptor) if "UTF-8" in str(exc) else None
            violation = FieldViolation(field, "not valid UTF-8 (string fields must be UTF-8)") if field else \
                FieldViolation("request", f"not a valid {name} encoding")
            abort_with(context, InvalidRequest([violation]))
        size = len(data)
        del data  # the parsed message holds what is needed: the wire bytes go now, not after the call
        try:
            return bytes(method(request, context).SerializeToString())
        finally:
            if size >= TRIM_AFTER_BYTES:
                del request
                release_freed_memory()

    return handle


def _add_ranking_service(servicer: RankingService, intake: Intake, server: grpc.aio.Server) -> None:
    """Register the service like the generated helper, each method behind the intake."""
    handlers = {}
    for m in svc_pb.DESCRIPTOR.services_by_name["RankingService"].methods:
        parse = message_factory.GetMessageClass(m.input_type).FromString
        handlers[m.name] = intake.method_handler(m.name, _handle(m.input_type.full_name, parse,
                                                                 getattr(servicer, m.name), m.input_type))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, handlers),))
    server.add_registered_method_handlers(SERVICE_NAME, handlers)


def _interceptors(settings: Settings) -> list[grpc.aio.ServerInterceptor]:
    """The bearer-token check when security.auth_token_file is set."""
    sec = settings.security
    if not sec.auth_token_file:
        return []
    return [BearerAuthInterceptor(TokenFile(sec.auth_token_file), open_matcher(sec.auth_open_methods))]


def _bind(server: grpc.aio.Server, key: str, address: str, credentials: grpc.ServerCredentials | None,
          shared: bool = False) -> int:
    try:
        port = (server.add_secure_port(address, credentials) if credentials is not None
                else server.add_insecure_port(address))
    except RuntimeError:  # grpc.aio raises where grpc returned 0
        port = 0
    if port == 0:
        if not shared:  # say why (a worker's port is held by its supervisor: a probe would find that)
            ports.check_free(key, address)
        raise ConfigError(f"{key} {address}: cannot bind (in use or not a local address)")
    return int(port)


def _health_listener(settings: Settings, servicer: health.aio.HealthServicer,
                     reuse_port: bool) -> tuple[grpc.aio.Server | None, int]:
    """A plaintext listener serving only grpc.health.v1 (Kubernetes grpc probes cannot speak TLS)."""
    address = settings.server.health_address
    if not address:
        return None, 0
    server = grpc.aio.server(options=_connection_options(settings.server, reuse_port))
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    return server, _bind(server, "server.health_address", address, None, reuse_port)


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


def serve_single(settings: Settings, reuse_port: bool = False, with_metrics: bool = True,
                 exit_when_done: bool = True, metrics_endpoint: bool = True) -> None:
    """Run one server process until SIGTERM/SIGINT, then drain and end the process (exit status 0);
    ``exit_when_done`` False: stop the listeners and return instead. ``metrics_endpoint`` False (a worker):
    metrics are recorded but served by the supervisor. The metrics port is bound before the gRPC one."""
    registry = CollectorRegistry() if with_metrics else None
    exposition = serve_metrics(settings.server.metrics_host, settings.server.metrics_port, registry) \
        if registry is not None and metrics_endpoint else None
    try:
        running = create_server(settings, registry, reuse_port)
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


def _worker_main(source: SettingsSource, index: int, parent: int, workers: int) -> None:
    settings = source.load()
    settings = replace(settings, server=replace(settings.server, workers=workers))
    setup_logging(settings.server.log_level)
    log.info("worker starting", extra={"worker": index, "pid": os.getpid(),
                                       "metrics": f"served by the supervisor ({metrics_url(settings.server)})"})
    _follow_parent(parent)
    serve_single(settings, reuse_port=True, with_metrics=True, metrics_endpoint=False)


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
    """server.workers, with 0 (auto) resolved: one per CPU this process may run on, 1 on an OS-picked port."""
    if settings.server.workers:
        return settings.server.workers
    if settings.server.address.rpartition(":")[2] == "0":
        return 1  # a port the OS picks cannot be shared: each worker would get its own
    return max(1, min(64, len(os.sched_getaffinity(0))))


def serve(settings: Settings, source: SettingsSource) -> None:
    """Serve with server.workers processes (one in-process server when it resolves to 1)."""
    check_tracing(settings.tracing)  # before any worker: a worker failing at start would be restarted forever
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
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=mp_dir)
    try:
        exposition = serve_metrics(settings.server.metrics_host, settings.server.metrics_port, registry)
    except BaseException:
        shutil.rmtree(mp_dir, ignore_errors=True)
        ports.release(holds)
        raise
    ctx = multiprocessing.get_context("spawn")
    procs: dict[int, multiprocessing.process.BaseProcess] = {}

    def start(i: int) -> None:
        p = ctx.Process(target=_worker_main, args=(source, i, os.getpid(), settings.server.workers),
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
    ports.release(holds)
    shutil.rmtree(mp_dir, ignore_errors=True)
    log.info("stopped", extra={"workers": len(procs)})
