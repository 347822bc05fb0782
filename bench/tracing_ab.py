"""Cost of OpenTelemetry tracing on the request path, side by side in one run.

    python -m bench.tracing_ab [--rounds 60]

At 400 candidates with 384-dim embeddings (the bench's seeded workload; the
`default` profile, diversity on, k = 20), the median thread-CPU time of one
Rank call's work, the four arms called alternately so machine load hits each
alike:

- bare: the four stages called directly (validate, convert, rank, encode), no
  tracing code at all (as handle_rank was before tracing), in the same coroutine
  wrapper as the others;
- off: ``handle_rank`` with ``trace=None``, wrapped like the server's intake
  handler (one coroutine on an event loop) — what every call pays with
  ``tracing.enabled: false``;
- on, ratio 0: tracing on, the call not sampled (no traceparent; spans
  non-recording);
- on, ratio 1: every call traced — the intake's SERVER span (W3C traceparent
  extracted, context attached) around ``handle_rank`` with its four stage spans
  and the attributes, ended into a BatchSpanProcessor.

The exporter here discards the batches (the SDK's processor thread does the
OTLP encoding and the HTTP post, off the request's thread); what that thread
spends is reported apart: encoding one call's five spans as OTLP protobuf.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import timeit
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from bench.data import workload
from memrank.api import convert
from memrank.api.call import Call, Policy, RankInput, handle_rank, untraced
from memrank.api.encode import outcome_to_proto
from memrank.api.validate import validate_rank_request
from memrank.config import TracingSettings, load_settings
from memrank.core.pipeline import rank
from memrank.grpc.tracing import Tracing, build_tracing

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


class Discard(SpanExporter):
    """Accepts every batch, keeps the last one (for the encoding cost)."""

    def __init__(self) -> None:
        self.last: Sequence[ReadableSpan] = ()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.last = spans
        return SpanExportResult.SUCCESS


class Context:
    """What the intake's handler reads of a grpc.aio context."""

    def __init__(self, metadata: tuple[tuple[str, str], ...]) -> None:
        self._metadata = metadata

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata

    def code(self) -> None:
        return None


def four_untraced_stages() -> None:
    """What handle_rank adds with tracing off: a no-op context manager around each stage."""
    for name in ("validate", "convert", "rank", "encode"):
        with untraced(name):
            pass


def traced(ratio: float, exporter: Discard) -> Tracing:
    """Tracing on, sampling ``ratio`` of the calls, its batches into ``exporter``."""
    tracing = build_tracing(TracingSettings(enabled=True, sampler_ratio=ratio), exporter=exporter)
    assert tracing is not None
    return tracing


def main() -> None:
    """Print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=60)
    args = ap.parse_args()
    s = load_settings(env={})
    req = workload(400, 384).request
    now = time.time()
    loop = asyncio.new_event_loop()
    discard = [Discard(), Discard()]
    tracing = [traced(r, d) for r, d in zip((0.0, 1.0), discard, strict=True)]

    async def bare(_requests: Any, _context: Any) -> bytes:
        cols = validate_rank_request(req, s.limits, profiles=s.profiles)
        batch, params = convert.request_to_domain(req, now, cols)
        outcome = rank(batch, params, s.profiles, s.layers)
        return bytes(outcome_to_proto(outcome, batch, params, req.request_id, s.policy_version).request_id,
                     "utf-8")

    def served(trace: Tracing | None, metadata: tuple[tuple[str, str], ...],
               serve: Callable[[Any, Any], Awaitable[bytes]] | None = None) -> Callable[[], bytes]:
        async def handle(_requests: Any, _context: Any) -> bytes:
            return bytes(handle_rank(RankInput(req), Policy.of(s), Call(now, trace=trace)).request_id, "utf-8")

        inner = serve or handle
        handler = inner if trace is None else trace.server("Rank", inner)
        context = Context(metadata)
        return lambda: loop.run_until_complete(handler(None, context))

    async def nothing(_requests: Any, _context: Any) -> bytes:
        trace = tracing[1]
        stage = trace.stages(len(req.candidates))
        for name in ("validate", "convert", "rank", "encode"):
            with stage(name):
                pass
        trace.outcome(outcome)
        return b""

    async def empty(_requests: Any, _context: Any) -> bytes:
        return b""

    cols = validate_rank_request(req, s.limits, profiles=s.profiles)
    outcome = rank(*convert.request_to_domain(req, now, cols), s.profiles, s.layers)
    arms = {"bare (no tracing code)": served(None, (), bare), "off (tracing.enabled false)": served(None, ()),
            "on, ratio 0 (not sampled)": served(tracing[0], ()),
            "on, ratio 1 (every call)": served(tracing[1], (("traceparent", TRACEPARENT),))}
    times: dict[str, list[float]] = {name: [] for name in arms}
    for fn in arms.values():
        fn()
    order = list(arms.items())
    for r in range(args.rounds):
        for name, fn in order[r % len(order):] + order[:r % len(order)]:  # rotated: no arm always follows another
            started = time.thread_time()
            fn()
            times[name].append(time.thread_time() - started)
    alone = served(tracing[1], (("traceparent", TRACEPARENT),), nothing)  # the same spans around no work
    spans_only = min(timeit.repeat(alone, number=200, repeat=5)) / 200
    off_only = min(timeit.repeat(served(None, (), empty), number=200, repeat=5)) / 200
    for t in tracing:
        t.provider.force_flush()
    spans = list(discard[1].last)[-5:]
    encode = min(timeit.repeat(lambda: encode_spans(spans).SerializeToString(), number=200, repeat=5)) / 200
    noop = min(timeit.repeat(four_untraced_stages, number=20_000, repeat=5)) / 20_000
    for t in tracing:
        t.shutdown()
    loop.close()

    base = float(np.median(times["off (tracing.enabled false)"]))
    traced_work = spans_only - off_only
    off = np.asarray(times["off (tracing.enabled false)"])
    print("| at 400 x 384, default profile | handler thread CPU, median (ms) | vs off | vs off, median of the "
          "rounds' differences (ms) |")
    print("|---|---:|---:|---:|")
    for name, samples in times.items():
        median = float(np.median(samples))
        paired = float(np.median(np.asarray(samples) - off))
        print(f"| {name} | {1000 * median:.2f} | {100 * (median - base) / base:+.1f} % | {1000 * paired:+.3f} |")
    print(f"\ntracing work alone (server span, traceparent, four stage spans, attributes; no ranking): "
          f"{1e6 * traced_work:.0f} µs a call = {100 * traced_work / base:.1f} % of the off median")
    print(f"processor thread (not the request's): OTLP protobuf encoding of one call's {len(spans)} spans "
          f"{1e6 * encode:.0f} µs; the off path's four no-op stage context managers {1e9 * noop:.0f} ns a call")


if __name__ == "__main__":
    main()
