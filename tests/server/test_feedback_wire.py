"""RecordFeedback on the wire (issue 32, item 10): what protobuf parses without complaint but reads wrong is refused
naming the field; a unary call carries one message; a compressed flag without an encoding is grpc core's to
refuse. A live server on loopback with the decision log on (a real file), called with hand-made bytes."""

from __future__ import annotations

import json
import struct
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from prometheus_client import CollectorRegistry

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.client import RankingClient
from memrank.config import DecisionLogSettings
from memrank.grpc.running import Running
from memrank.grpc.server import create_server
from tests.support import h2
from tests.support.servers import loopback_settings

FEEDBACK = "/memrank.v1.RankingService/RecordFeedback"


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[tuple[Running, CollectorRegistry, Path]]:
    path = tmp_path / "decisions.jsonl"
    s = loopback_settings()
    registry = CollectorRegistry()
    running = create_server(replace(s, decision_log=DecisionLogSettings(enabled=True, sink="file", path=str(path))),
                            registry)
    yield running, registry, path
    running.stop(5)


def _varint(value: int) -> bytes:
    out = b""
    while True:
        low, value = value & 0x7F, value >> 7
        if not value:
            return out + bytes([low])
        out += bytes([low | 0x80])


def _field(number: int, wire: int, payload: bytes) -> bytes:
    return _varint(number << 3 | wire) + (_varint(len(payload)) + payload if wire == 2 else payload)


def _feedback(*labels: bytes) -> bytes:
    """A RecordFeedbackRequest (request_id "r") with these FeedbackLabel bodies."""
    return _field(2, 2, b"r") + b"".join(_field(3, 2, body) for body in labels)


def _label(cid: str, relevance: bytes) -> bytes:
    return _field(1, 2, cid.encode()) + relevance


def _call(port: int, payloads: list[bytes], method: str = FEEDBACK) -> grpc.RpcError | bytes:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.stream_unary(method, request_serializer=None, response_deserializer=None)
        try:
            return call(iter(payloads), timeout=10)  # type: ignore[no-any-return]
        except grpc.RpcError as err:
            return err


def _violations(err: grpc.RpcError | bytes) -> dict[str, str]:
    assert isinstance(err, grpc.RpcError), f"answered OK: {err!r}"
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err
    status = rpc_status.from_call(err)
    assert status is not None
    bad = error_details_pb2.BadRequest()
    assert next(d for d in status.details if d.Is(bad.DESCRIPTOR)).Unpack(bad)
    return {v.field: v.description for v in bad.field_violations}


def _feedback_records(path: Path, port: int) -> list[object]:
    """The labels of the feedback records written so far: a sentinel feedback is sent last and waited for (the
    writer process appends in order), then left out."""
    answer = _call(port, [_feedback(_label("sentinel", _field(2, 0, b"\x01")))])
    assert isinstance(answer, bytes), answer
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        lines = path.read_text().splitlines() if path.exists() else []
        labels = [r["labels"] for r in map(json.loads, lines) if r.get("schema") == "memrank.feedback.v1"]
        if labels and labels[-1] == [{"candidate_id": "sentinel", "relevance": 1}]:
            return labels[:-1]
        time.sleep(0.05)
    raise AssertionError(f"the sentinel feedback was not written: {path}")


def test_a_relevance_sent_as_a_double_nan_is_refused_not_stored_as_zero(
        served: tuple[Running, CollectorRegistry, Path]) -> None:
    running, _, path = served
    nan = _field(2, 1, struct.pack("<d", float("nan")))
    bad = _violations(_call(running.port, [_feedback(_label("m0", _field(2, 0, b"\x02")), _label("m1", nan))]))
    assert list(bad) == ["labels[1].relevance"], bad
    assert "not a uint32" in bad["labels[1].relevance"] and "0..3" in bad["labels[1].relevance"]
    assert _feedback_records(path, running.port) == []


@pytest.mark.parametrize("value", [2**32 + 1, 2**64 - 1])
def test_a_relevance_past_uint32_is_refused_not_cut_to_its_low_bits(
        served: tuple[Running, CollectorRegistry, Path], value: int) -> None:
    running, _, path = served
    bad = _violations(_call(running.port, [_feedback(_label("m0", _field(2, 0, _varint(value))))]))
    assert bad == {"labels[0].relevance": f"{value} is outside 0..3 (past uint32)"}, bad
    assert _feedback_records(path, running.port) == []


def test_a_well_formed_feedback_is_still_written(served: tuple[Running, CollectorRegistry, Path]) -> None:
    running, _, path = served
    answer = _call(running.port, [_feedback(_label("m0", _field(2, 0, b"\x03")))])
    assert isinstance(answer, bytes) and pb.RecordFeedbackResponse.FromString(answer).label_count == 1
    assert _feedback_records(path, running.port) == [[{"candidate_id": "m0", "relevance": 3}]]


@pytest.mark.parametrize("method", [FEEDBACK, "/memrank.v1.RankingService/Rank"])
def test_two_messages_on_a_unary_call_are_refused(served: tuple[Running, CollectorRegistry, Path],
                                                  method: str) -> None:
    running, registry, path = served
    one = (_feedback(_label("m0", _field(2, 0, b"\x01"))) if method == FEEDBACK
           else pb.RankRequest(query="q", candidates=[pb.Candidate(id="a", content="x")]).SerializeToString())
    err = _call(running.port, [one, one], method)
    assert isinstance(err, grpc.RpcError) and err.code() == grpc.StatusCode.INVALID_ARGUMENT, err
    assert "takes one request message, got more" in (err.details() or "")
    name = method.rsplit("/", 1)[1]
    assert registry.get_sample_value("memrank_requests_total", {"method": name, "code": "INVALID_ARGUMENT"}) == 1
    assert _feedback_records(path, running.port) == []


def test_a_compressed_flag_without_an_encoding_is_refused_by_grpc_core_and_the_server_goes_on(
        served: tuple[Running, CollectorRegistry, Path]) -> None:
    """grpc's core answers it before memrank sees the message (INTERNAL, its own clear message); memrank cannot
    change that code. The call is still counted, once; grpc.aio does not say which of core's refusals it was, so
    it is counted as core's usual one, RESOURCE_EXHAUSTED (``intake.core_ended_code``). The server keeps
    answering."""
    running, registry, _ = served
    conn = h2.Connection(running.port)
    try:
        conn.start_call(1, FEEDBACK)
        conn.send(h2.DATA, h2.END_STREAM, 1, b"\x01" + (3).to_bytes(4, "big") + b"abc")
        end = conn.read_until(h2.HEADERS, timeout=5)
        while end is not None and not end.flags & h2.END_STREAM:
            end = conn.read_until(h2.HEADERS, timeout=5)
    finally:
        conn.close()
    assert end is not None
    assert b"grpc-status\x0213" in end.payload and b"Compression bit set but no encoding configured" in end.payload
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not _feedback_counts(registry):
        time.sleep(0.02)
    assert _feedback_counts(registry) == {"RESOURCE_EXHAUSTED": 1}
    with RankingClient(f"127.0.0.1:{running.port}", retries=0, timeout=5) as client:
        assert client.health() == "SERVING"


def _feedback_counts(registry: CollectorRegistry) -> dict[str, float]:
    """memrank_requests_total of RecordFeedback by code."""
    return {s.labels["code"]: s.value for m in registry.collect() for s in m.samples
            if s.name == "memrank_requests_total" and s.labels.get("method") == "RecordFeedback"}
