"""The Python clients' retries are gRPC's, from the one service config every client ships: a call never outlives its
deadline (``timeout`` bounds all its attempts), UNAVAILABLE is retried (and nothing else), ``retries`` and
``backoff`` map onto the config.

Attempts are counted where they arrive, at a loopback server in front of the live one (``Flaky``: it answers
UNAVAILABLE as told, else forwards to the real server, rich error details included), so no assertion rests on
how long a retry took to happen.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health, health_pb2_grpc

from memrank.client import Candidate, RankingClient, RankingError, RankRequest, Unavailable, service_config
from memrank.grpc.running import Running
from tests.support.servers import free_port

ROOT = Path(__file__).resolve().parents[2]
SERVICE = "memrank.v1.RankingService"
REQUEST = {"requestId": "python-flaky", "candidates": [{"id": "a", "retrievalScore": 0.5, "importance": 0.5}]}


def _identity(b: bytes) -> bytes:
    return b


class Flaky:
    """A gRPC server on a loopback port that fails the first ``fail_first`` RankingService calls with UNAVAILABLE
    (each after ``fail_after`` seconds) and forwards the others, as bytes, to the live server."""

    def __init__(self, upstream: str) -> None:
        self.fail_first = 0
        self.fail_after = 0.0
        self.attempts = 0
        self._lock = threading.Lock()
        self._upstream = grpc.insecure_channel(upstream)
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        self._server.add_generic_rpc_handlers((self,))
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        method: str = details.method
        if not method.startswith(f"/{SERVICE}/"):
            return None
        forward = self._upstream.unary_unary(method, request_serializer=_identity, response_deserializer=_identity)

        def handle(request: bytes, context: grpc.ServicerContext) -> bytes:
            with self._lock:
                self.attempts += 1
                n = self.attempts
            if n <= self.fail_first:
                if self.fail_after:
                    time.sleep(self.fail_after)
                context.abort(grpc.StatusCode.UNAVAILABLE, f"flaky: failing attempt {n}")
            try:
                response: bytes = forward(request, timeout=context.time_remaining())
            except grpc.RpcError as err:  # the real server's refusal, its details with it
                context.set_trailing_metadata(err.trailing_metadata())  # type: ignore[attr-defined]
                context.abort(err.code(), err.details())  # type: ignore[attr-defined]
            return response

        return grpc.unary_unary_rpc_method_handler(handle, request_deserializer=_identity,
                                                   response_serializer=_identity)

    def close(self) -> None:
        self._server.stop(0)
        self._upstream.close()


@pytest.fixture()
def flaky(live_server: Running) -> Iterator[Flaky]:
    proxy = Flaky(f"127.0.0.1:{live_server.port}")
    yield proxy
    proxy.close()


def _policy(config: dict[str, Any]) -> dict[str, Any]:
    method = next(m for m in config["methodConfig"] if {"service": SERVICE} in m["name"])
    return dict(method.get("retryPolicy", {})) | ({"waitForReady": True} if method.get("waitForReady") else {})


def test_the_service_config_is_the_shared_file_and_says_what_the_defaults_are() -> None:
    shared = json.loads((ROOT / "clients" / "service_config.json").read_text())
    assert service_config() == shared, "server/memrank/client/service_config.json is stale: run clients/gen.sh"
    assert _policy(shared) == {"maxAttempts": 4, "initialBackoff": "0.05s", "maxBackoff": "1s",
                               "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}
    with RankingClient("127.0.0.1:1") as client:
        assert (client.retries, client.backoff, client.service_config) == (3, 0.05, shared)


def test_retries_and_backoff_map_onto_the_service_config() -> None:
    assert _policy(service_config(retries=0)) == {}
    assert _policy(service_config(retries=2, backoff=0.01)) | {"retryableStatusCodes": None} == {
        "maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "1s", "backoffMultiplier": 2,
        "retryableStatusCodes": None}
    longer = _policy(service_config(retries=10, backoff=2))
    assert (longer["maxAttempts"], longer["waitForReady"], longer["initialBackoff"], longer["maxBackoff"]) == \
        (5, True, "2s", "2s")
    for bad in ({"retries": -1}, {"backoff": 0.0}):
        with pytest.raises(ValueError):
            service_config(**bad)  # type: ignore[arg-type]


def test_the_deadline_bounds_every_attempt(flaky: Flaky) -> None:
    # Every attempt answers UNAVAILABLE after 300 ms: five attempts would take at least 1.5 s, so a call that
    # ends before that was cut by its 1 s deadline, with a retry in it (margins wide enough for a loaded machine,
    # where the first attempt also pays for the connection).
    flaky.fail_first, flaky.fail_after = 100, 0.3
    with RankingClient(flaky.address, timeout=1.0, retries=4, backoff=0.001) as client:
        started = time.monotonic()
        with pytest.raises(RankingError) as err:
            client.rank(REQUEST)
        took = time.monotonic() - started
    assert err.value.code in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE), err.value
    assert took < 1.5, f"the call outlived its 1 s deadline: {took:.3f} s"
    assert 2 <= flaky.attempts <= 4, f"want 2 to 4 attempts within the deadline, the server saw {flaky.attempts}"


def test_unavailable_is_retried_until_the_real_answer(flaky: Flaky) -> None:
    flaky.fail_first = 2
    with RankingClient(flaky.address, backoff=0.001) as client:
        resp = client.rank(REQUEST)
    assert (resp.request_id, [m.id for m in resp.selected]) == ("python-flaky", ["a"])
    assert flaky.attempts == 3


def test_retries_stop_at_the_policy_and_other_codes_are_not_retried(flaky: Flaky) -> None:
    flaky.fail_first = 100
    with RankingClient(flaky.address, retries=1, backoff=0.001) as client, pytest.raises(Unavailable) as err:
        client.rank(REQUEST)
    assert (err.value.message, flaky.attempts) == ("flaky: failing attempt 2", 2)
    flaky.fail_first, flaky.attempts = 0, 0
    with RankingClient(flaky.address, backoff=0.001) as client, pytest.raises(RankingError) as refused:
        client.rank({"candidates": [{"id": "a"}, {"id": "a"}]})  # the real server's INVALID_ARGUMENT
    assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT and refused.value.fields == ("candidates[1].id",)
    assert flaky.attempts == 1
    flaky.fail_first, flaky.attempts = 1, 0
    with RankingClient(flaky.address, retries=0) as client, pytest.raises(Unavailable):
        client.rank(REQUEST)
    assert flaky.attempts == 1


def test_a_refused_connection_ends_within_the_deadline() -> None:
    port = free_port()  # nothing listens: every attempt is UNAVAILABLE at once
    for retries in (None, 10):  # 10: wait-for-ready, so the deadline ends the call
        with RankingClient(f"127.0.0.1:{port}", timeout=1.0, retries=retries) as client:
            started = time.monotonic()
            with pytest.raises(RankingError) as err:
                client.list_profiles()
            took = time.monotonic() - started
        assert err.value.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
        assert took < 1.5, f"retries {retries}: the call outlived its 1 s deadline: {took:.3f} s"


def test_more_retries_than_grpc_allows_wait_for_a_server_that_comes_up() -> None:
    port = free_port()
    with RankingClient(f"127.0.0.1:{port}", retries=0, timeout=2) as fail_fast, pytest.raises(Unavailable):
        fail_fast.health()  # nothing listens: refused at once
    with RankingClient(f"127.0.0.1:{port}", retries=10, timeout=0.3) as patient:
        with pytest.raises(RankingError) as err:
            patient.health()
        assert err.value.code == grpc.StatusCode.DEADLINE_EXCEEDED  # it waited for a server, up to its deadline
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        health_pb2_grpc.add_HealthServicer_to_server(health.HealthServicer(), server)
        assert server.add_insecure_port(f"127.0.0.1:{port}") == port
        server.start()
        try:
            assert patient.health(timeout=10) == "SERVING"  # the same channel, once something listens
        finally:
            server.stop(0)


def test_a_call_that_succeeds_is_unaffected(live_server: Running) -> None:
    with RankingClient(f"127.0.0.1:{live_server.port}", timeout=5.0) as client:
        assert client.health() == "SERVING"
        resp = client.rank(RankRequest(candidates=[Candidate(id="a", retrieval_score=0.5, importance=0.5)]))
        assert [m.id for m in resp.selected] == ["a"]
