"""Building a server: service + health + reflection on grpc.aio listeners, behind the intake.

RankingService work runs on the handler pool behind the concurrency limit and the byte budget (see
``intake``), so no caller can hold what health checks or other callers need. Running it as a process (one
or several workers, signals, the drain on exit) is ``supervisor``'s.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Any

import grpc
from google.protobuf import descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import DecodeError, Message
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from memrank._gen.v1 import ranking_service_pb2 as svc_pb
from memrank.api.feedback import relevance_wire_violations
from memrank.api.wire import bad_utf8_field, parse_rank
from memrank.config import ServerSettings, Settings
from memrank.core.errors import ConfigError, FieldViolation, InvalidRequest
from memrank.grpc.accounting import Unknown, method_label
from memrank.grpc.auth import BearerAuthInterceptor, TokenFile, open_matcher
from memrank.grpc.errors import abort_with, code_of
from memrank.grpc.inflight import ByteBudget, Unsent, auto_budget, memory_limit, memory_needed, unsent_cap
from memrank.grpc.intake import CallContext, Handle, Intake
from memrank.grpc.running import Loop, Running
from memrank.grpc.service import RankingService
from memrank.grpc.tls import server_credentials
from memrank.grpc.tracing import Tracing, build_tracing
from memrank.metrics.declare import Metrics
from memrank.metrics.deferred import FlushFirst
from memrank.metrics.registry import Registry, new_registry
from memrank.system import ports
from memrank.system.defaults import TRIM_AFTER_BYTES, release_freed_memory

log = logging.getLogger("memrank.server")
SERVICE_NAME = svc_pb.DESCRIPTOR.services_by_name["RankingService"].full_name


def create_server(settings: Settings, registry: Registry | None = None, reuse_port: bool = False,
                  tracing: Tracing | None = None, worker_metrics_dir: str | None = None) -> Running:
    """Build and start a server on settings.server.address (port 0 picks a free port).

    ``tracing``: given (tests: an in-memory exporter), else built from settings.tracing (None when off).
    ``worker_metrics_dir``: this server is a supervisor's worker, whose metrics the supervisor reads from files
    in that directory at any moment (prometheus_client's multiprocess mode, and memrank's signal histogram)."""
    s = settings.server
    registry = registry if registry is not None else new_registry()
    # One process: drift gauges are published when a scrape reads them.
    # Workers of a supervisor record inline: the supervisor reads their files at any moment.
    after_reply = worker_metrics_dir is None
    flush = FlushFirst()
    if after_reply:
        registry.register(flush)  # before every family, so it runs first
    metrics = Metrics(registry, worker_metrics_dir)
    tracing = tracing if tracing is not None else build_tracing(settings.tracing)
    service = RankingService(settings, metrics, after_reply=after_reply, tracing=tracing)
    flush.target = service.deferred
    budget = ByteBudget(inflight_budget(s))
    intake = Intake(s.thread_pool_size, s.max_concurrent_rpcs, s.request_read_timeout_seconds, metrics.observe_call,
                    budget, tracing, s.response_send_timeout_seconds, metrics.observe_send_timeout,
                    Unsent(unsent_cap(s.max_unsent_bytes_per_connection, budget.total), metrics.observe_unsent_refusal))
    loop = Loop()
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


async def _start(settings: Settings, service: RankingService, intake: Intake, loop: Loop,
                 reuse_port: bool) -> Running:
    """Build, bind and start the listeners (on the loop: grpc.aio servers belong to the loop that makes them)."""
    s = settings.server
    server = grpc.aio.server(options=[*_message_options(s), *_connection_options(s, reuse_port)],
                             interceptors=_interceptors(settings, service.observe_call))
    _add_ranking_service(service, intake, server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME), server,
        pool=_MethodAwarePool(descriptor_pool.Default()),
    )
    server.add_generic_rpc_handlers((Unknown(service.observe_call),))  # last: only what nothing else serves
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
    budget = s.max_inflight_bytes or auto_budget(limit, workers, s.max_message_bytes, s.feature_memo_bytes)
    need = memory_needed(workers, budget, s.feature_memo_bytes)
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
        # The limit counts the streams the client sees open (HTTP/2's own rule), so a client that waits
        # for a free stream is never refused. grpc core's default ("overload protection") also counts a
        # stream the client saw end but the server has not freed yet: a client's next call, started the
        # instant another ended, was refused with REFUSED_STREAM (UNAVAILABLE; 46 of 512 calls of 64
        # threads on one channel). The intake's slots and byte budget bound the real work either way.
        ("grpc.http.overload_protection", 0),
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


# What protobuf parses without complaint but reads wrong, checked on a method's request bytes.
WIRE_CHECKS: dict[str, Callable[[bytes], list[FieldViolation]]] = {"RecordFeedback": relevance_wire_violations}


PARSERS: dict[str, Callable[[bytes], Any]] = {"Rank": parse_rank}


def _handle(name: str, parse: Callable[[bytes], Any], method: Callable[[Any, Any], Message],
            descriptor: Descriptor, observe: Callable[[str], None],
            check: Callable[[bytes], list[FieldViolation]] | None = None) -> Handle:
    """Parse, call, serialise; request bytes that do not parse are INVALID_ARGUMENT with a field
    violation (grpc itself answers INTERNAL), naming the string field that is not UTF-8 when that is why,
    and counted (``observe``) as the servicer counts the calls it refuses."""
    def handle(holder: list[bytes], context: CallContext) -> bytes:
        data = holder.pop()
        try:
            request = parse(data)
        except DecodeError as exc:
            field = bad_utf8_field(data, descriptor) if "UTF-8" in str(exc) else None
            violation = FieldViolation(field, "not valid UTF-8 (string fields must be UTF-8)") if field else \
                FieldViolation("request", f"not a valid {name} encoding")
            refused = InvalidRequest([violation])
            observe(code_of(refused).name)
            log.info("rpc refused: request does not decode", extra={"method": name, "field": field})
            abort_with(context, refused)
        if check is not None and (bad := check(data)):
            refused = InvalidRequest(bad)
            observe(code_of(refused).name)
            log.info("rpc refused: a field's wire encoding", extra={"method": name, "field": bad[0].field})
            abort_with(context, refused)
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
        parse = PARSERS.get(m.name, message_factory.GetMessageClass(m.input_type).FromString)
        handlers[m.name] = intake.method_handler(m.name, _handle(m.input_type.full_name, parse,
                                                                 getattr(servicer, m.name), m.input_type,
                                                                 partial(servicer.observe_call, m.name),
                                                                 WIRE_CHECKS.get(m.name)))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, handlers),))
    server.add_registered_method_handlers(SERVICE_NAME, handlers)


def _interceptors(settings: Settings, observe: Callable[[str, str], None]) -> list[grpc.aio.ServerInterceptor]:
    """The bearer-token check when security.auth_token_file is set; its refusals counted by ``observe``."""
    sec = settings.security
    if not sec.auth_token_file:
        return []
    return [BearerAuthInterceptor(TokenFile(sec.auth_token_file), open_matcher(sec.auth_open_methods),
                                  lambda path, code: observe(method_label(path), code))]


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
