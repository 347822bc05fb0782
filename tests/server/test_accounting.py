"""Every call is counted in memrank_requests_total with its code, refused ones included (issue 32, item 8):
unauthenticated, undecodable, without a request message, refused at intake. A live server on loopback, called
over gRPC; the counts are read from the registry it records into."""

from __future__ import annotations

import re
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from prometheus_client import CollectorRegistry

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.grpc.running import Running
from memrank.grpc.server import create_server
from tests.support.servers import free_port, loopback_settings, start_serve, stop

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


def _wait_for_count(registry: CollectorRegistry, method: str, code: str, want: float) -> None:
    """A call without a message is counted once grpc is done with it, which may be just after its client has
    its status: wait (generously, the machine may be loaded) for the count."""
    _wait_for(lambda: _count(registry, method, code), want, f"{method} {code}")


def _wait_for(read: Callable[[], float], want: float, what: str) -> None:
    deadline = time.monotonic() + 30
    while (got := read()) != want and time.monotonic() < deadline:
        time.sleep(0.02)
    assert got == want, f"{what}: {got} counted, want {want}"


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
    _wait_for_count(registry, method, code, before + 1)


def test_a_request_over_the_message_limit_is_counted_as_resource_exhausted(tmp_path: Path) -> None:
    """grpc's core refuses it (RESOURCE_EXHAUSTED) before memrank sees a byte: memrank sees a call without a
    message that core ended, and counts it under the code the client got, not the one memrank would have sent
    (INVALID_ARGUMENT)."""
    settings = loopback_settings(max_message_bytes=1024)
    registry = CollectorRegistry()
    running = create_server(settings, registry)
    try:
        big = pb.RankRequest(query="x" * 4096).SerializeToString()
        assert _raw_call(running.port, RANK, [big], token=None) == grpc.StatusCode.RESOURCE_EXHAUSTED
        _wait_for_count(registry, "Rank", "RESOURCE_EXHAUSTED", 1)
        assert _count(registry, "Rank", "INVALID_ARGUMENT") == 0
    finally:
        running.stop(0)


def _scraped(port: int, method: str, code: str) -> float:
    """memrank_requests_total{method, code} as /metrics shows it (0 when absent)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    found = re.search(rf'^memrank_requests_total{{code="{code}",method="{method}"}} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


def test_a_live_server_shows_an_over_limit_request_under_the_code_its_client_got(tmp_path: Path) -> None:
    """`memrank serve` with a 1 KiB message limit: an over-limit Rank is RESOURCE_EXHAUSTED on the wire and
    in /metrics, an empty one INVALID_ARGUMENT in both (memrank's own answer)."""
    mport = free_port()
    proc = start_serve(tmp_path, "--address", "127.0.0.1:0", "--metrics-port", str(mport),
                       env={"MEMRANK_MAX_MESSAGE_BYTES": "1024"})
    try:
        big = pb.RankRequest(query="x" * 4096).SerializeToString()
        assert _raw_call(proc.port, RANK, [big], token=None) == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert _raw_call(proc.port, RANK, [big], token=None) == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert _raw_call(proc.port, RANK, [], token=None) == grpc.StatusCode.INVALID_ARGUMENT
        _wait_for(lambda: _scraped(mport, "Rank", "RESOURCE_EXHAUSTED"), 2, "/metrics Rank RESOURCE_EXHAUSTED")
        _wait_for(lambda: _scraped(mport, "Rank", "INVALID_ARGUMENT"), 1, "/metrics Rank INVALID_ARGUMENT")
    finally:
        stop(proc)
