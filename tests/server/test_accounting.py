"""Every call is counted in memrank_requests_total with its code, refused ones included (issue 32, item 8):
unauthenticated, undecodable, without a request message, refused at intake. A live server on loopback, called
over gRPC; the counts are read from the registry it records into."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from prometheus_client import CollectorRegistry

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.grpc.running import Running
from memrank.grpc.server import create_server
from tests.support.servers import loopback_settings

TOKEN = "accounting-test-token"
RANK = "/memrank.v1.RankingService/Rank"


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[tuple[Running, CollectorRegistry]]:
    tokens = tmp_path / "tokens"
    tokens.write_text(TOKEN + "\n", encoding="utf-8")
    settings = loopback_settings()
    settings = replace(settings, security=replace(settings.security, auth_token_file=str(tokens)))
    registry = CollectorRegistry()
    running = create_server(settings, registry)
    yield running, registry
    running.stop(0)


def _count(registry: CollectorRegistry, method: str, code: str) -> float:
    return registry.get_sample_value("memrank_requests_total", {"method": method, "code": code}) or 0.0


def _raw_call(port: int, method: str, payloads: list[bytes], token: str | None = TOKEN) -> grpc.StatusCode:
    """A call sending these request messages as they are (bytes), returning its status code."""
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.stream_unary(method, request_serializer=None, response_deserializer=None)
        try:
            call(iter(payloads), timeout=10, metadata=metadata)
        except grpc.RpcError as err:
            return err.code()  # type: ignore[no-any-return]
    return grpc.StatusCode.OK


def _rank_bytes() -> bytes:
    return pb.RankRequest(query="tea", candidates=[pb.Candidate(id="a", content="tea", retrieval_score=0.9)]
                          ).SerializeToString()


@pytest.mark.parametrize(("case", "token", "payloads", "method", "code"), [
    ("no token", None, [_rank_bytes()], "Rank", "UNAUTHENTICATED"),
    ("a wrong token", "nope", [_rank_bytes()], "Rank", "UNAUTHENTICATED"),
    ("an unknown method, no token", None, [b""], "other", "UNAUTHENTICATED"),
    ("an unknown method", TOKEN, [b""], "other", "UNIMPLEMENTED"),
    ("undecodable bytes", TOKEN, [b"\xff\xff\xff"], "Rank", "INVALID_ARGUMENT"),
    ("no request message", TOKEN, [], "Rank", "INVALID_ARGUMENT"),
    ("answered", TOKEN, [_rank_bytes()], "Rank", "OK"),
])
def test_every_call_is_counted_with_its_code(served: tuple[Running, CollectorRegistry], case: str,
                                             token: str | None, payloads: list[bytes], method: str,
                                             code: str) -> None:
    running, registry = served
    path = RANK if method != "other" else "/memrank.v1.RankingService/NoSuchMethod"
    before = _count(registry, method, code)
    got = _raw_call(running.port, path, payloads, token)
    assert got.name == code, case
    assert _count(registry, method, code) == before + 1, case


def test_a_request_over_the_message_limit_is_counted(tmp_path: Path) -> None:
    """grpc's core refuses it (RESOURCE_EXHAUSTED) before memrank sees a byte: memrank sees a call without a
    message, and counts it under the status it would have sent (INVALID_ARGUMENT), so it is not lost."""
    settings = loopback_settings(max_message_bytes=1024)
    registry = CollectorRegistry()
    running = create_server(settings, registry)
    try:
        big = pb.RankRequest(query="x" * 4096).SerializeToString()
        assert _raw_call(running.port, RANK, [big], token=None) == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert _count(registry, "Rank", "INVALID_ARGUMENT") == 1
    finally:
        running.stop(0)
