"""Every client-controlled string has a limit, and bytes that are not UTF-8 are refused naming their field."""

from __future__ import annotations

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.wire import bad_utf8_field
from memrank.client import RankingClient, RankingError
from memrank.grpc.running import Running

REF = "2026-06-01T12:00:00Z"
BIG = "x" * 5000


@pytest.mark.parametrize(("patch", "field", "limit"), [
    ({"kind": "k" * 129}, "candidates[1].kind", "limits.max_kind_bytes"),
    ({"provenance": "a" * 129}, "candidates[1].provenance", "limits.max_provenance_bytes"),
    ({"metadata": {"k" * 129: "v"}}, "candidates[1].metadata", "limits.max_metadata_key_bytes"),
    ({"metadata": {"topic": BIG}}, 'candidates[1].metadata["topic"]', "limits.max_metadata_value_bytes"),
    ({"facetScores": {"f" * 129: 0.5}}, "candidates[1].facet_scores", "at most 128 bytes"),
    ({"stageScores": {"s" * 129: 0.5}}, "candidates[1].stage_scores", "at most 128 bytes"),
])
def test_each_candidate_string_has_a_limit(client: RankingClient, patch: dict[str, object], field: str,
                                           limit: str) -> None:
    cands = [{"id": "a", "retrievalScore": 0.5}, {"id": "b", "retrievalScore": 0.5, **patch}]
    with pytest.raises(RankingError) as info:
        client.rank({"referenceTime": REF, "candidates": cands})
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert field in info.value.fields, info.value.fields
    assert any(limit in str(v) for v in info.value.violations), info.value.violations
    assert "k" * 60 not in str(info.value) and BIG not in str(info.value)  # a hostile name is not echoed whole


@pytest.mark.parametrize(("request_patch", "field"), [
    ({"profile": "p" * 129}, "profile"), ({"shadowProfile": "p" * 129}, "shadow_profile"),
    ({"weightOverrides": {"w" * 129: 0.5}}, "weight_overrides"),
    ({"weightOverrides": {f"s{k}": 0.5 for k in range(65)}}, "weight_overrides"),
])
def test_request_names_have_limits(client: RankingClient, request_patch: dict[str, object], field: str) -> None:
    with pytest.raises(RankingError) as info:
        client.rank({"referenceTime": REF, "candidates": [{"id": "a", "retrievalScore": 0.5}], **request_patch})
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT and field in info.value.fields


def _bad(req: pb.RankRequest, needle: bytes) -> bytes:
    """The request's bytes with ``needle`` (ASCII, in a string field) turned into invalid UTF-8."""
    raw = req.SerializeToString()
    assert raw.count(needle) == 1
    return raw.replace(needle, b"\xff" + needle[1:])


def _violations(live_server: Running, payload: bytes) -> list[str]:
    with grpc.insecure_channel(f"127.0.0.1:{live_server.port}") as channel:
        call = channel.unary_unary("/memrank.v1.RankingService/Rank", request_serializer=lambda b: b,
                                   response_deserializer=lambda b: b)
        with pytest.raises(grpc.RpcError) as info:
            call(payload, timeout=5)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    status = rpc_status.from_call(info.value)
    assert status is not None
    bad = error_details_pb2.BadRequest()
    next(d for d in status.details if d.Is(bad.DESCRIPTOR)).Unpack(bad)
    return [f"{v.field}: {v.description}" for v in bad.field_violations]


def test_bytes_that_are_not_utf8_are_refused_naming_the_field(live_server: Running) -> None:
    req = pb.RankRequest(query="tea", candidates=[
        pb.Candidate(id="a", content="plain"), pb.Candidate(id="b", content="zebra stripes", metadata={"topic": "qq"})])
    assert _violations(live_server, _bad(req, b"zebra")) == [
        "candidates[1].content: not valid UTF-8 (string fields must be UTF-8)"]
    assert _violations(live_server, _bad(req, b"qq")) == [
        'candidates[1].metadata["topic"]: not valid UTF-8 (string fields must be UTF-8)']
    assert _violations(live_server, _bad(req, b"tea")) == ["query: not valid UTF-8 (string fields must be UTF-8)"]
    # Truncated bytes are still refused as a whole.
    assert _violations(live_server, req.SerializeToString()[:-3]) == [
        "request: not a valid memrank.v1.RankRequest encoding"]


def test_the_wire_walker_on_its_own() -> None:
    req = pb.RankRequest(layers=[pb.LayerPolicy(name="ok"), pb.LayerPolicy(name="mmm")], candidates=[
        pb.Candidate(id="a", metadata={"kkk": "v"})])
    d = pb.RankRequest.DESCRIPTOR
    assert bad_utf8_field(_bad(req, b"mmm"), d) == "layers[1].name"
    assert bad_utf8_field(_bad(req, b"kkk"), d) == "candidates[0].metadata"  # the key itself: no name to show
    assert bad_utf8_field(req.SerializeToString(), d) is None
    assert bad_utf8_field(b"\x0a\xff\xff\xff", d) is None  # malformed: no answer, no crash
