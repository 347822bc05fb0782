"""OpenTelemetry tracing (issue 22): spans join the caller's trace, reach an OTLP/HTTP collector, are absent when off.

- In process, with the SDK's in-memory exporter behind the server's own batch processor: a real gRPC
  call carrying a W3C ``traceparent`` gets a SERVER span in the caller's trace (its parent is the
  caller's span), with validate/convert/rank/encode children and count attributes, and no memory
  content, query text or id anywhere in a span.
- A real ``memrank serve`` process exporting over OTLP/HTTP to a small collector written here
  (http.server decoding ExportTraceServiceRequest with opentelemetry-proto): the spans held by a
  long batch delay arrive when SIGTERM drains the process (1 and 2 workers); a collector that is down
  costs the shutdown at most the flush bound; the standard OTEL_* variables configure endpoint,
  sampler, service name and batch delay.
- Off: no OpenTelemetry module is imported, no processor thread runs, nothing is exported even with
  OTEL_* set; on without the packages: the start fails naming the extra.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as OtlpSpan
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from bench.data import workload
from memrank import __version__
from memrank._gen.v1 import ranking_pb2 as pb
from memrank._gen.v1 import ranking_service_pb2_grpc as svc
from memrank.config import ENV_KEYS, TracingSettings, load_settings
from memrank.core.errors import ConfigError
from memrank.grpc.running import Running
from memrank.grpc.server import create_server
from memrank.grpc.tracing import FLUSH_SECONDS, build_tracing
from tests.support.helm import CHART, find_helm, missing, run_helm, template_args
from tests.support.servers import Proc, free_port, loopback_settings, start_serve, stop

ROOT = Path(__file__).resolve().parents[2]
CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
STAGES = ("memrank.validate", "memrank.convert", "memrank.rank", "memrank.encode")
SECRET_QUERY = "zyzzyva quetzal query words"
SECRET_CONTENT = "quokka axolotl content words"
REQUEST_ID = "request-id-7f3a"


@pytest.fixture(autouse=True)
def _no_outside_otel_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """OTEL_* set where the tests run would change what the SDK does (and reach the subprocesses)."""
    for var in [k for k in os.environ if k.startswith("OTEL_")]:
        monkeypatch.delenv(var)


def traceparent(trace_id: str = CALLER_TRACE, span_id: str = CALLER_SPAN, sampled: bool = True) -> str:
    return f"00-{trace_id}-{span_id}-{'01' if sampled else '00'}"


def rank_request(n: int = 60) -> pb.RankRequest:
    """The bench workload (embeddings, near-copies: several drop reasons) with text that must never be in a span."""
    req = workload(n, 16).request
    req.query = f"{SECRET_QUERY} {req.query}"
    req.candidates[0].content += f" {SECRET_CONTENT}"
    req.request_id = REQUEST_ID
    return req


def texts_of(req: pb.RankRequest) -> set[str]:
    return {req.query, req.request_id, SECRET_QUERY, SECRET_CONTENT, *(c.content for c in req.candidates),
            *(c.id for c in req.candidates)}


def dropped_by_reason(resp: pb.RankResponse) -> dict[str, int]:
    return dict(Counter(pb.DropReason.Name(d.reason).removeprefix("DROP_REASON_").lower() for d in resp.dropped))


# ---------------------------------------------------------------- in process, in-memory exporter


@dataclass
class Traced:
    running: Running
    exporter: InMemorySpanExporter

    def stub(self, channel: grpc.Channel) -> svc.RankingServiceStub:
        return svc.RankingServiceStub(channel)

    def channel(self) -> grpc.Channel:
        return grpc.insecure_channel(f"127.0.0.1:{self.running.port}")

    def spans(self) -> tuple[ReadableSpan, ...]:
        """Every span, after the server's stop has flushed its batch processor."""
        self.running.stop(5)
        return self.exporter.get_finished_spans()


@contextmanager
def traced_server(ratio: float | None) -> Iterator[Traced]:
    exporter = InMemorySpanExporter()
    tracing = build_tracing(TracingSettings(enabled=True, sampler_ratio=ratio), exporter=exporter)
    running = create_server(loopback_settings(), tracing=tracing)
    try:
        yield Traced(running, exporter)
    finally:
        running.stop(0)


@pytest.fixture()
def traced() -> Iterator[Traced]:
    with traced_server(1.0) as t:
        yield t


def strings_in(span: ReadableSpan) -> list[str]:
    """Every string a span carries: name, status, attribute values, events, links, resource."""
    out = [span.name, span.status.description or ""]
    attribute_sets = [span.attributes or {}, span.resource.attributes]
    attribute_sets += [e.attributes or {} for e in span.events] + [link.attributes or {} for link in span.links]
    for attributes in attribute_sets:
        for key, value in attributes.items():
            out.append(key)
            out.extend(map(str, value) if isinstance(value, Sequence) and not isinstance(value, str) else [str(value)])
    return out


def assert_no_request_text(spans: Sequence[ReadableSpan], req: pb.RankRequest, *extra: str) -> None:
    forbidden = texts_of(req) | set(extra)
    for span in spans:
        for text in strings_in(span):
            leaked = [t for t in forbidden if t and t in text]
            assert not leaked, (span.name, text, leaked[:3])


def test_a_rank_call_joins_the_callers_trace_with_stage_spans_and_counts(traced: Traced) -> None:
    req = rank_request()
    with traced.channel() as channel:
        resp = traced.stub(channel).Rank(req, metadata=[("traceparent", traceparent()), ("tracestate", "acme=7")],
                                         timeout=10)
    spans = traced.spans()
    (server,) = [s for s in spans if s.kind is SpanKind.SERVER]
    assert server.name == "memrank.v1.RankingService/Rank"
    assert server.context is not None and server.parent is not None
    assert f"{server.context.trace_id:032x}" == CALLER_TRACE, "the span joins the caller's trace"
    assert f"{server.parent.span_id:016x}" == CALLER_SPAN and server.parent.is_remote
    assert server.context.trace_state.get("acme") == "7"
    children = [s for s in spans if s is not server]
    assert [c.name for c in sorted(children, key=lambda c: c.start_time or 0)] == list(STAGES)
    for child in children:
        assert child.context is not None and child.parent is not None
        assert child.context.trace_id == server.context.trace_id
        assert child.parent.span_id == server.context.span_id and child.kind is SpanKind.INTERNAL
        assert (server.start_time or 0) <= (child.start_time or 0) <= (child.end_time or 0) <= (server.end_time or 0)
        assert child.status.status_code is StatusCode.UNSET
    by_reason = dropped_by_reason(resp)
    assert len(by_reason) >= 2, by_reason  # the check below means something
    assert dict(server.attributes or {}) == {
        "rpc.system": "grpc", "rpc.service": "memrank.v1.RankingService", "rpc.method": "Rank",
        "rpc.grpc.status_code": 0, "memrank.candidate_count": len(req.candidates), "memrank.profile": resp.profile,
        "memrank.selected_count": len(resp.selected), "memrank.dropped_count": len(resp.dropped),
        **{f"memrank.dropped.{reason}": count for reason, count in by_reason.items()},
    }
    assert server.status.status_code is StatusCode.UNSET
    assert server.resource.attributes["service.name"] == "memrank"
    assert server.resource.attributes["service.version"] == __version__
    assert_no_request_text(spans, req)


def test_refusals_other_methods_new_traces_and_unsampled_callers(traced: Traced) -> None:
    bad = rank_request(10)
    bad.profile = "no-such-profile-5d1e"
    with traced.channel() as channel:
        stub = traced.stub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            stub.Rank(bad, metadata=[("traceparent", traceparent())], timeout=10)
        assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        stub.ListProfiles(pb.ListProfilesRequest(), timeout=10)  # no traceparent: a trace of its own
        unsampled = "1" * 32
        stub.Rank(rank_request(10), metadata=[("traceparent", traceparent(unsampled, sampled=False))], timeout=10)
        health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
        assert health.status == health_pb2.HealthCheckResponse.SERVING
    spans = traced.spans()
    assert all(s.context is not None and f"{s.context.trace_id:032x}" != unsampled for s in spans), \
        "a caller that did not sample its trace gets no spans (parent-based)"
    assert not [s for s in spans if "Health" in s.name], "health checks are not traced"
    servers = {s.name: s for s in spans if s.kind is SpanKind.SERVER}
    assert set(servers) == {"memrank.v1.RankingService/Rank", "memrank.v1.RankingService/ListProfiles"}
    rank = servers["memrank.v1.RankingService/Rank"]
    attrs = dict(rank.attributes or {})
    assert attrs["rpc.grpc.status_code"] == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert attrs["memrank.candidate_count"] == 10 and "memrank.profile" not in attrs
    assert rank.status.status_code is StatusCode.UNSET, "a caller's error is not a server error"
    failed = [s for s in spans if s.status.status_code is StatusCode.ERROR]
    assert [s.name for s in failed] == ["memrank.rank"]  # the profile is resolved when ranking
    assert failed[0].status.description == "UnknownProfile", "the type, not the message (which quotes fields)"
    listed = servers["memrank.v1.RankingService/ListProfiles"]
    assert listed.parent is None and dict(listed.attributes or {})["rpc.grpc.status_code"] == 0
    assert_no_request_text(spans, bad, bad.profile)


def test_ratio_zero_traces_only_callers_that_sampled() -> None:
    with traced_server(0.0) as traced:
        with traced.channel() as channel:
            stub = traced.stub(channel)
            stub.Rank(rank_request(10), timeout=10)
            stub.Rank(rank_request(10), metadata=[("traceparent", traceparent())], timeout=10)
        spans = traced.spans()
        assert {f"{s.context.trace_id:032x}" for s in spans if s.context is not None} == {CALLER_TRACE}
        assert len(spans) == 1 + len(STAGES)


def test_tracing_settings_and_their_otel_fallbacks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A tracing key that is set wins over its OTEL_* variable; one left null defers to it."""
    s = load_settings(env={}).tracing
    assert s == TracingSettings(enabled=False, endpoint=None, sampler_ratio=None, service_name=None)
    env = {"MEMRANK_TRACING_ENABLED": "true", "MEMRANK_TRACING_ENDPOINT": "http://collector:4318/v1/traces",
           "MEMRANK_TRACING_SAMPLER_RATIO": "0.25", "MEMRANK_TRACING_SERVICE_NAME": "ranker"}
    assert load_settings(env=env).tracing == TracingSettings(True, "http://collector:4318/v1/traces", 0.25, "ranker")
    empty = {k: "" for k in env if k != "MEMRANK_TRACING_ENABLED"}  # what an unset chart value could pass
    assert load_settings(env=empty).tracing == TracingSettings()
    config = tmp_path / "c.yaml"
    config.write_text("tracing: {enabled: true, sampler_ratio: 0}\n")
    assert load_settings(str(config), env={}).tracing.sampler_ratio == 0.0
    for bad, message in (({"MEMRANK_TRACING_SAMPLER_RATIO": "1.5"},
                          "tracing.sampler_ratio (set by MEMRANK_TRACING_SAMPLER_RATIO): 1.5 is outside [0, 1]"),
                         ({"MEMRANK_TRACING_ENDPOINT": "collector:4318"},
                          "tracing.endpoint (set by MEMRANK_TRACING_ENDPOINT): expected an http"),
                         ({"MEMRANK_TRACING_ENABLED": "maybe"},
                          "tracing.enabled (set by MEMRANK_TRACING_ENABLED): expected true or false")):
        with pytest.raises(ConfigError, match=re.escape(message)):
            load_settings(env=bad)

    def provider(settings: TracingSettings) -> Any:
        tracing = build_tracing(settings, exporter=InMemorySpanExporter())
        assert tracing is not None
        tracing.shutdown()
        return tracing.provider

    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "traceidratio")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER_ARG", "0.5")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "from-otel")
    deferred = provider(TracingSettings(enabled=True))
    assert deferred.sampler.get_description() == "TraceIdRatioBased{0.5}"
    assert deferred.resource.attributes["service.name"] == "from-otel"
    chosen = provider(TracingSettings(enabled=True, sampler_ratio=0.125, service_name="ranker"))
    assert chosen.sampler.get_description() == "ParentBased{root:TraceIdRatioBased{0.125},remoteParentSampled:" \
        "AlwaysOnSampler,remoteParentNotSampled:AlwaysOffSampler,localParentSampled:AlwaysOnSampler," \
        "localParentNotSampled:AlwaysOffSampler}"
    assert chosen.resource.attributes["service.name"] == "ranker"
    for var in ("OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG", "OTEL_SERVICE_NAME"):
        monkeypatch.delenv(var)
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test")
    plain = provider(TracingSettings(enabled=True))
    assert plain.sampler.get_description().startswith("ParentBased{root:AlwaysOnSampler")
    assert plain.resource.attributes["service.name"] == "memrank"
    assert plain.resource.attributes["deployment.environment"] == "test"


# ---------------------------------------------------------------- a real process, a real OTLP/HTTP collector


class Collector:
    """An OTLP/HTTP trace receiver: POST /v1/traces with a protobuf ExportTraceServiceRequest."""

    def __init__(self) -> None:
        self.exports: list[ExportTraceServiceRequest] = []
        self.paths: list[str] = []
        self._lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                with collector._lock:
                    collector.paths.append(self.path)
                if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
                    self.send_response(404)
                    self.end_headers()
                    return
                export = ExportTraceServiceRequest.FromString(body)
                with collector._lock:
                    collector.exports.append(export)
                out = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *_args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="otlp-collector", daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Collector:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def spans(self) -> list[tuple[dict[str, Any], OtlpSpan]]:
        """(resource attributes, span) of every span received so far."""
        with self._lock:
            exports = list(self.exports)
        return [(attributes(rs.resource.attributes), span) for e in exports for rs in e.resource_spans
                for ss in rs.scope_spans for span in ss.spans]


def value(v: AnyValue) -> Any:
    return getattr(v, str(v.WhichOneof("value")))


def attributes(kvs: Any) -> dict[str, Any]:
    return {kv.key: value(kv.value) for kv in kvs}


def serve_env(**extra: str) -> dict[str, str]:
    """The environment of a `memrank serve` here: no proxy for the loopback collector."""
    return {"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost", **extra}


def started(tmp_path: Path, workers: int, env: dict[str, str]) -> tuple[Proc, str]:
    """`memrank serve` with this many workers; returns it and its target once every worker serves."""
    address = "127.0.0.1:0" if workers == 1 else f"127.0.0.1:{free_port()}"
    proc = start_serve(tmp_path, "--address", address, "--metrics-port", "0", "--workers", str(workers), env=env)
    deadline = time.monotonic() + 30
    while sum(line.get("msg") == "serving" for line in proc.lines()) < workers:
        assert time.monotonic() < deadline, proc.log.read_text()
        time.sleep(0.05)
    return proc, f"127.0.0.1:{proc.port}"


def call_traced(target: str, traces: Sequence[str]) -> list[pb.RankResponse]:
    with grpc.insecure_channel(target) as channel:
        stub = svc.RankingServiceStub(channel)
        return [stub.Rank(rank_request(40), metadata=[("traceparent", traceparent(t))], timeout=20,
                          wait_for_ready=True) for t in traces]


def wait_for(predicate: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return bool(predicate())


@pytest.mark.parametrize("workers", [1, 2])
def test_spans_reach_an_otlp_http_collector_when_sigterm_drains_the_process(tmp_path: Path, workers: int) -> None:
    traces = [f"{i + 1:032x}" for i in range(6)]
    with Collector() as collector:
        env = serve_env(MEMRANK_TRACING_ENABLED="true", MEMRANK_TRACING_ENDPOINT=f"{collector.base}/v1/traces",
                        MEMRANK_TRACING_SAMPLER_RATIO="1", MEMRANK_TRACING_SERVICE_NAME="memrank-under-test",
                        OTEL_BSP_SCHEDULE_DELAY="600000")  # ten minutes: only the shutdown flush sends them
        proc, target = started(tmp_path, workers, env)
        try:
            responses = call_traced(target, traces)
            time.sleep(0.5)
            assert collector.spans() == [], "held by the batch delay until the drain"
        finally:
            code = stop(proc)
        assert code == 0, proc.log.read_text()
        spans = collector.spans()
    assert set(collector.paths) == {"/v1/traces"}
    servers = [(r, s) for r, s in spans if s.kind == OtlpSpan.SPAN_KIND_SERVER]
    assert sorted(s.trace_id.hex() for _, s in servers) == traces
    for resource, span in servers:
        assert span.name == "memrank.v1.RankingService/Rank" and span.parent_span_id.hex() == CALLER_SPAN
        assert resource["service.name"] == "memrank-under-test" and resource["service.version"] == __version__
        a = attributes(span.attributes)
        assert a["memrank.candidate_count"] == 40 and a["rpc.grpc.status_code"] == 0
        assert a["memrank.selected_count"] == len(responses[0].selected)
        children = [s for _, s in spans if s.parent_span_id == span.span_id]
        assert sorted(c.name for c in children) == sorted(STAGES)
        assert all(c.trace_id == span.trace_id for c in children)
    assert len(spans) == len(traces) * (1 + len(STAGES))
    if workers == 2:
        drained = [line for line in proc.lines() if line.get("msg") == "stopped" and "pid" in line]
        assert len(drained) == 2, "both workers drained and flushed"


def test_a_collector_that_is_down_delays_neither_calls_nor_shutdown_past_the_flush_bound(tmp_path: Path) -> None:
    env = serve_env(MEMRANK_TRACING_ENABLED="true", OTEL_BSP_SCHEDULE_DELAY="600000",
                    MEMRANK_TRACING_ENDPOINT=f"http://127.0.0.1:{free_port()}/v1/traces")  # nothing listens
    proc, target = started(tmp_path, 1, env)
    try:
        began = time.monotonic()
        call_traced(target, [CALLER_TRACE])
        assert time.monotonic() - began < 5
    finally:
        began = time.monotonic()
        code = stop(proc)
        took = time.monotonic() - began
    assert code == 0
    assert took < FLUSH_SECONDS + 2.5, took  # the exporter alone would retry for 10 s
    assert "spans not exported within the shutdown flush; the rest are lost" in [line["msg"] for line in proc.lines()]


def test_the_standard_otel_variables_configure_endpoint_sampler_service_and_batching(tmp_path: Path) -> None:
    """tracing.enabled alone; everything else from OTEL_*: the endpoint's base URL (the exporter adds
    /v1/traces), a parent-based ratio 0 sampler (only the sampled caller is traced), the service name and
    a short batch delay (spans arrive while serving)."""
    with Collector() as collector:
        env = serve_env(MEMRANK_TRACING_ENABLED="true", OTEL_EXPORTER_OTLP_ENDPOINT=collector.base,
                        OTEL_TRACES_SAMPLER="parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG="0",
                        OTEL_SERVICE_NAME="from-otel-env", OTEL_BSP_SCHEDULE_DELAY="100")
        proc, target = started(tmp_path, 1, env)
        try:
            with grpc.insecure_channel(target) as channel:
                stub = svc.RankingServiceStub(channel)
                stub.Rank(rank_request(20), timeout=20)  # no parent, ratio 0: not traced
                stub.Rank(rank_request(20), metadata=[("traceparent", traceparent())], timeout=20)
            assert wait_for(lambda: len(collector.spans()) == 1 + len(STAGES), 10), collector.spans()
        finally:
            assert stop(proc) == 0
        spans = collector.spans()
    assert {s.trace_id.hex() for _, s in spans} == {CALLER_TRACE}
    assert {r["service.name"] for r, _ in spans} == {"from-otel-env"}


# ---------------------------------------------------------------- off, and on without the packages

OFF_SCRIPT = """
import json, sys, threading
import grpc
from bench.data import workload
from memrank._gen.v1 import ranking_service_pb2_grpc as svc
from memrank.grpc.server import create_server
from tests.support.servers import loopback_settings
running = create_server(loopback_settings())
with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel:
    svc.RankingServiceStub(channel).Rank(workload(40, 8).request, metadata=[("traceparent", sys.argv[1])], timeout=20)
threads = sorted(t.name for t in threading.enumerate())
off = [running.tracing is None, running.intake.tracing is None, running.service._tracing is None]
running.stop(1)
print(json.dumps({"modules": sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry"),
                  "threads": threads, "off": off}))
"""


def test_off_imports_no_opentelemetry_and_starts_no_thread() -> None:
    env = serve_env(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9", OTEL_TRACES_SAMPLER="always_on")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("MEMRANK_")}, **env}
    proc = subprocess.run([sys.executable, "-c", OFF_SCRIPT, traceparent()], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["off"] == [True, True, True]
    assert out["modules"] == [], "tracing off loads no OpenTelemetry module"
    assert not [t for t in out["threads"] if "Otel" in t or "trace" in t], out["threads"]


def test_off_exports_nothing_even_with_otel_variables_set(tmp_path: Path) -> None:
    with Collector() as collector:
        env = serve_env(OTEL_EXPORTER_OTLP_ENDPOINT=collector.base, OTEL_TRACES_SAMPLER="always_on",
                        OTEL_BSP_SCHEDULE_DELAY="50")
        proc, target = started(tmp_path, 1, env)
        try:
            call_traced(target, [CALLER_TRACE, "2" * 32])
            time.sleep(0.5)
        finally:
            assert stop(proc) == 0
        assert collector.paths == [] and collector.spans() == []


NO_OTEL = "import sys; sys.modules['opentelemetry'] = None; from memrank.cli import main; sys.exit(main(sys.argv[1:]))"


@pytest.mark.parametrize("workers", [1, 2])
def test_on_without_the_packages_fails_at_start_naming_the_extra(workers: int) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("MEMRANK_")}, "MEMRANK_TRACING_ENABLED": "true"}
    proc = subprocess.run([sys.executable, "-c", NO_OTEL, "serve", "--address", f"127.0.0.1:{free_port()}",
                           "--metrics-port", "0", "--workers", str(workers)],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=60, check=False)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "tracing.enabled: true, but the OpenTelemetry packages are not installed" in proc.stderr
    assert "pip install 'memrank-sidecar[tracing]'" in proc.stderr
    assert "worker starting" not in proc.stderr + proc.stdout, "refused before any worker starts"


# ---------------------------------------------------------------- the chart's switches


def test_the_chart_passes_its_tracing_values_as_known_memrank_variables(tmp_path: Path) -> None:
    helm = find_helm()
    if helm is None:
        missing("helm binary not found (go install helm.sh/helm/v3/cmd/helm@v3.22.0)")
    assert helm is not None

    def env_of(values: dict[str, Any]) -> dict[str, str]:
        proc = run_helm(helm, *template_args(CHART, tmp_path, [values]))
        assert proc.returncode == 0, proc.stderr
        (deployment,) = [d for d in yaml.safe_load_all(proc.stdout) if d and d["kind"] == "Deployment"]
        (container,) = [c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "memrank"]
        return {e["name"]: e.get("value", "") for e in container["env"]}

    on = env_of({"tracing": {"enabled": True, "endpoint": "http://otel-collector.obs:4318/v1/traces",
                             "samplerRatio": 0.05}})
    assert {k for k in on if k.startswith("MEMRANK_")} <= set(ENV_KEYS) | {"MEMRANK_CONFIG"}
    settings = load_settings(env={k: v for k, v in on.items() if k in ENV_KEYS}).tracing
    assert settings == TracingSettings(True, "http://otel-collector.obs:4318/v1/traces", 0.05, None)
    assert load_settings(env={k: v for k, v in env_of({"tracing": {"enabled": True, "samplerRatio": 0}}).items()
                              if k in ENV_KEYS}).tracing == TracingSettings(True, None, 0.0, None)
    defaults = env_of({"tracing": {"enabled": True}})
    assert [k for k in defaults if k.startswith("MEMRANK_TRACING_")] == ["MEMRANK_TRACING_ENABLED"]
    assert not [k for k in env_of({}) if k.startswith("MEMRANK_TRACING_")]
    for bad in ({"samplerRatio": 1.5}, {"endpoint": "otel-collector:4318"}, {"sampler": 1}):
        proc = run_helm(helm, *template_args(CHART, tmp_path, [{"tracing": {"enabled": True, **bad}}]))
        assert proc.returncode != 0 and "values don't meet the specifications of the schema" in proc.stderr, bad
