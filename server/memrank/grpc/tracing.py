"""OpenTelemetry tracing at the gRPC edge (opt-in: ``tracing.enabled``; the ``tracing`` extra).

Off (the default), nothing here is built and no OpenTelemetry module is
imported: the intake and ``handle_rank`` are given ``None`` and pay one
``is None`` check (plus a shared no-op context manager around each stage).

On, every RankingService call (not health, not reflection) gets a SERVER span,
``memrank.v1.RankingService/<Method>``, started on the event loop when the call
arrives, so it covers reading the request, waiting for a slot and a thread, the
handler and the refusals (RESOURCE_EXHAUSTED, UNAVAILABLE while draining). It
continues the caller's W3C trace context (``traceparent``/``tracestate`` in the
call's metadata; none: a new trace). The span is made current in the call's
context, which the handler thread runs in, so ``handle_rank``'s stage spans
(``memrank.validate``, ``memrank.convert``, ``memrank.rank`` — scoring and
selection, one pure core call — and ``memrank.encode``) are its children. A call not sampled gets a non-recording
server span and the no-op stages.

Attributes are counts and names, never memory content, query text or ids:
``rpc.system``, ``rpc.service``, ``rpc.method``, ``rpc.grpc.status_code``,
``memrank.candidate_count``, ``memrank.profile``, ``memrank.selected_count``,
``memrank.dropped_count`` and ``memrank.dropped.<reason>`` per drop reason.

Spans go through a BatchSpanProcessor (its own thread; ``OTEL_BSP_*``) to the
OTLP/HTTP exporter (``OTEL_EXPORTER_OTLP_*``). ``shutdown`` flushes them, at most
``FLUSH_SECONDS``, after the drain and before the process ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from importlib import util
from typing import TYPE_CHECKING, Any

import grpc
import numpy as np

from memrank import __version__
from memrank.api.call import untraced
from memrank.config import TracingSettings
from memrank.core.errors import ConfigError
from memrank.core.types import DropReason

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Tracer

    from memrank.core.explain.outcome import RankOutcome

log = logging.getLogger("memrank.tracing")
EXTRA = "memrank-sidecar[tracing]"
SERVICE = "memrank.v1.RankingService"
FLUSH_SECONDS = 3.0  # at shutdown, spans not exported by then are lost (the pod's grace has 5 s beyond the drain)
DEFAULT_SERVICE_NAME = "memrank"
_MODULES = ("opentelemetry.sdk.trace", "opentelemetry.exporter.otlp.proto.http.trace_exporter")
# The codes for which a gRPC server span's status is ERROR (OpenTelemetry's RPC semantic conventions).
_SERVER_ERRORS = frozenset({grpc.StatusCode.UNKNOWN, grpc.StatusCode.DEADLINE_EXCEEDED,
                            grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.INTERNAL, grpc.StatusCode.UNAVAILABLE,
                            grpc.StatusCode.DATA_LOSS})
_CODES = {c.value[0]: c for c in grpc.StatusCode}
_DROP_KEYS = {r.value: f"memrank.dropped.{r.name.lower()}" for r in DropReason if r is not DropReason.KEPT}

Serve = Callable[[Any, grpc.aio.ServicerContext], Awaitable[bytes]]


def check_tracing(settings: TracingSettings) -> None:
    """Fail at start, naming the extra, when tracing is on and the OpenTelemetry packages are missing."""
    if not settings.enabled:
        return
    missing = []
    for name in _MODULES:
        try:
            found = util.find_spec(name) is not None
        except ImportError:  # a parent package is missing
            found = False
        if not found:
            missing.append(name)
    if missing:
        raise ConfigError(f"tracing.enabled: true, but the OpenTelemetry packages are not installed (no "
                          f"{', '.join(missing)}): pip install '{EXTRA}', or turn tracing off")


class Tracing:
    """A tracer over its own TracerProvider (not the global one): server spans, stage spans, attributes."""

    def __init__(self, provider: TracerProvider, tracer: Tracer) -> None:
        from opentelemetry import context as otel_context
        from opentelemetry import trace
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        self.provider = provider
        self._tracer = tracer
        self._propagator = TraceContextTextMapPropagator()
        self._context = otel_context
        self._trace = trace
        self._closed = False
        self._lock = threading.Lock()

    def server(self, method: str, serve: Serve) -> Serve:
        """``serve`` (an intake handler, on the event loop) inside a SERVER span continuing the caller's trace."""
        from opentelemetry.trace import SpanKind, Status, StatusCode

        name = f"{SERVICE}/{method}"
        attributes = {"rpc.system": "grpc", "rpc.service": SERVICE, "rpc.method": method}
        tracer, propagator, ctx = self._tracer, self._propagator, self._context
        set_span = self._trace.set_span_in_context

        async def traced(requests: Any, context: grpc.aio.ServicerContext) -> bytes:
            parent = propagator.extract(_carrier(context.invocation_metadata() or ()))
            span = tracer.start_span(name, context=parent, kind=SpanKind.SERVER, attributes=attributes)
            token = ctx.attach(set_span(span, parent))  # the handler thread runs in a copy of this context
            code = grpc.StatusCode.OK
            try:
                return await serve(requests, context)
            except asyncio.CancelledError:
                code = grpc.StatusCode.CANCELLED
                raise
            except BaseException:  # an abort (its code is on the context) or a failure
                code = _code(context.code()) or grpc.StatusCode.UNKNOWN
                raise
            finally:
                span.set_attribute("rpc.grpc.status_code", code.value[0])
                if code in _SERVER_ERRORS:
                    span.set_status(Status(StatusCode.ERROR, code.name))
                ctx.detach(token)
                span.end()

        return traced

    def stages(self, candidates: int) -> Callable[[str], contextlib.AbstractContextManager[None]]:
        """``stage`` when the call's span is sampled (its candidate count set on it), else the shared no-op."""
        span = self._trace.get_current_span()
        if not span.is_recording():
            return untraced
        span.set_attribute("memrank.candidate_count", candidates)
        return self.stage

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """A child span of the current (server) span around one stage; an exception marks it ERROR by type only."""
        from opentelemetry.trace import Status, StatusCode

        span = self._tracer.start_span(f"memrank.{name}")
        try:
            yield
        except BaseException as exc:
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))  # not str(exc): it may quote a field
            raise
        finally:
            span.end()

    def outcome(self, outcome: RankOutcome) -> None:
        """Profile, selected count and dropped counts per reason, on the current span."""
        span = self._trace.get_current_span()
        if not span.is_recording():
            return
        drops = np.asarray(outcome.drop, dtype=np.int64)
        counts = np.bincount(drops[drops > 0], minlength=len(_DROP_KEYS) + 1).tolist()
        attributes: dict[str, str | int] = {"memrank.profile": outcome.profile.name,
                                            "memrank.selected_count": len(outcome.ranked),
                                            "memrank.dropped_count": int(drops.size - len(outcome.ranked))}
        attributes.update({key: counts[value] for value, key in _DROP_KEYS.items() if counts[value]})
        span.set_attributes(attributes)

    def shutdown(self, timeout: float = FLUSH_SECONDS) -> None:
        """Export the spans still queued and stop the processor thread, waiting at most ``timeout`` seconds."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        flush = threading.Thread(target=self.provider.shutdown, name="memrank-trace-flush", daemon=True)
        flush.start()
        flush.join(timeout)
        if flush.is_alive():
            log.warning("spans not exported within the shutdown flush; the rest are lost",
                        extra={"seconds": timeout})


def build_tracing(settings: TracingSettings, exporter: SpanExporter | None = None) -> Tracing | None:
    """The server's tracing from ``tracing.*`` (None when off). ``exporter`` replaces the OTLP/HTTP one (tests)."""
    if not settings.enabled:
        return None
    check_tracing(settings)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    named = {SERVICE_NAME: settings.service_name} if settings.service_name else {}
    resource = Resource.create({SERVICE_VERSION: __version__, **named})  # + OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: DEFAULT_SERVICE_NAME}))
    # None: the SDK reads OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG (default parentbased_always_on).
    sampler = None if settings.sampler_ratio is None else ParentBased(TraceIdRatioBased(settings.sampler_ratio))
    provider = TracerProvider(resource=resource, sampler=sampler, shutdown_on_exit=False)
    # endpoint None: the exporter reads OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT, its default.
    provider.add_span_processor(BatchSpanProcessor(exporter or OTLPSpanExporter(endpoint=settings.endpoint)))
    log.info("tracing on", extra={"endpoint": settings.endpoint or "from OTEL_EXPORTER_OTLP_* or the default",
                                  "sampler": provider.sampler.get_description(),
                                  "service_name": resource.attributes.get(SERVICE_NAME)})
    return Tracing(provider, provider.get_tracer("memrank", __version__))


def _carrier(metadata: Sequence[tuple[str, Any]]) -> dict[str, str]:
    """The call's text metadata as a propagator carrier (gRPC keys are lower case; -bin values are bytes)."""
    return {key: value for key, value in metadata if isinstance(value, str)}


def _code(value: Any) -> grpc.StatusCode | None:
    """grpc.aio's context.code(): a StatusCode, an int (cygrpc) or None (not set)."""
    if value is None or isinstance(value, grpc.StatusCode):
        return value
    return _CODES.get(int(value))
