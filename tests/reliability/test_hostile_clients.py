"""Hostile clients: held-back requests, unauthenticated floods, slow senders, idle and vanished peers.

Issue 19 §1: every call counted against server.max_concurrent_rpcs (and, in the
thread-per-call server, held a handler thread) from the moment it was accepted, so
64 calls that send their headers and hold the request back made Rank and
grpc.health.v1.Health/Check answer RESOURCE_EXHAUSTED, without a token. Each test
here starts a real server on loopback with settings read the way `memrank serve`
reads them (MEMRANK_* variables).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from memrank._gen.v1 import ranking_service_pb2_grpc as pb_grpc
from memrank.config import Settings, load_settings
from memrank.grpc.server import create_server
from memrank.metrics.registry import new_registry
from tests.reliability.conftest import accounted, rank_request
from tests.support import h2
from tests.support.servers import free_port, start_serve, stop

TOKEN = "hostile-suite-token"
RANK = "/memrank.v1.RankingService/Rank"
HEALTH_CHECK = "/grpc.health.v1.Health/Check"
REQUEST = rank_request(5)


def _settings(env: dict[str, object]) -> Settings:
    """Settings from MEMRANK_* variables, on a free loopback port, metrics off."""
    s = load_settings(env={k: str(v) for k, v in env.items()})
    return replace(s, server=replace(s.server, address="127.0.0.1:0", metrics_port=0))


@pytest.fixture()
def tokens(tmp_path: Path) -> Path:
    path = tmp_path / "tokens"
    path.write_text(f"{TOKEN}\n")
    return path


def _channel(target: str) -> grpc.Channel:
    """A channel with a connection of its own (not shared with other channels to the same target)."""
    return grpc.insecure_channel(target, options=[("grpc.use_local_subchannel_pool", 1)])


def _metadata(token: str | None) -> tuple[tuple[str, str], ...] | None:
    return (("authorization", f"Bearer {token}"),) if token else None


class HeldBack:
    """The issue's reproduction: calls that send their headers, then hold the request back until closed."""

    def __init__(self, target: str, calls: int, method: str = RANK, token: str | None = None,
                 connections: int = 1) -> None:
        self._release = threading.Event()
        self.channels = [_channel(target) for _ in range(connections)]
        for channel in self.channels:  # connected first: a burst sent before the server's SETTINGS arrive
            grpc.channel_ready_future(channel).result(timeout=5)  # is refused beyond its stream limit
        self.ended: list[tuple[float, grpc.Future]] = []  # (monotonic time, call) as calls end
        self.calls = []
        for channel in self.channels:
            call = channel.stream_unary(method)
            for _ in range(calls):
                future = call.future(self._body(), metadata=_metadata(token), timeout=60)
                future.add_done_callback(lambda f: self.ended.append((time.monotonic(), f)))
                self.calls.append(future)

    def _body(self) -> Iterator[bytes]:
        self._release.wait(60)
        yield from ()

    def codes(self, timeout: float) -> list[grpc.StatusCode]:
        """Each call's status code, waiting at most ``timeout`` seconds for all of them."""
        deadline = time.monotonic() + timeout
        return [c.exception(timeout=max(0.0, deadline - time.monotonic())).code() for c in self.calls]

    def close(self) -> None:
        for call in self.calls:
            call.cancel()
        self._release.set()
        for channel in self.channels:
            channel.close()


def _health(target: str) -> str:
    """Health/Check's answer on a fresh connection, or the status code name."""
    with _channel(target) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=2)
        except grpc.RpcError as err:
            return str(err.code().name)
    return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))


def _rank(target: str, token: str | None) -> str:
    """A well-behaved Rank on a fresh connection: "OK" (every candidate accounted for) or the status code name."""
    with _channel(target) as channel:
        try:
            reply = pb_grpc.RankingServiceStub(channel).Rank(REQUEST, metadata=_metadata(token), timeout=5)
        except grpc.RpcError as err:
            return str(err.code().name)
    return "OK" if accounted(REQUEST, reply) else "LOST"


# (auth on, the attacker's token): no auth; auth and a valid token; auth and no token.
ATTACKERS = [pytest.param(False, None, id="auth-off"), pytest.param(True, TOKEN, id="with-token"),
             pytest.param(True, None, id="without-token")]


@pytest.mark.parametrize(("auth", "attacker_token"), ATTACKERS)
def test_held_back_requests_leave_health_serving_and_other_callers_answered(
        tokens: Path, auth: bool, attacker_token: str | None) -> None:
    # No stream limit in the way: all 64 reach the server, as many as it has slots (and 8 times its threads).
    env: dict[str, object] = {"MEMRANK_MAX_STREAMS_PER_CONNECTION": 1000}
    running = create_server(_settings(env | ({"MEMRANK_AUTH_TOKEN_FILE": tokens} if auth else {})))
    target = f"127.0.0.1:{running.port}"
    held = HeldBack(target, 64, token=attacker_token)
    try:
        time.sleep(0.5)  # the 64 calls are open on the server
        assert [_health(target) for _ in range(3)] == ["SERVING"] * 3
        assert [_rank(target, TOKEN if auth else None) for _ in range(3)] == ["OK"] * 3
    finally:
        held.close()
        running.stop(0)


@pytest.mark.parametrize("attacker_token", [TOKEN, None], ids=["with-token", "without-token"])
def test_held_back_requests_starve_no_worker_of_two(tmp_path: Path, tokens: Path, attacker_token: str | None) -> None:
    port = free_port()
    proc = start_serve(tmp_path, "--address", f"127.0.0.1:{port}", "--metrics-port", "0", "--workers", "2",
                       env={"MEMRANK_AUTH_TOKEN_FILE": str(tokens), "MEMRANK_MAX_STREAMS_PER_CONNECTION": "1000"})
    target = f"127.0.0.1:{port}"
    held = None
    try:
        deadline = time.monotonic() + 30
        while sum(1 for line in proc.lines() if line["msg"] == "serving") < 2:
            assert time.monotonic() < deadline, "workers did not start"
            time.sleep(0.1)
        # 4 connections of 64 held-back calls: the kernel spreads connections over both workers.
        held = HeldBack(target, 64, token=attacker_token, connections=4)
        time.sleep(1.0)
        # Fresh connections land on either worker: every one answers.
        assert [_health(target) for _ in range(8)] == ["SERVING"] * 8
        assert [_rank(target, TOKEN) for _ in range(8)] == ["OK"] * 8
    finally:
        if held is not None:
            held.close()
        assert stop(proc) == 0


def test_unauthenticated_calls_are_refused_before_their_request_arrives(tokens: Path) -> None:
    # One slot and one handler thread: a refusal that took either would stall the rest.
    running = create_server(_settings({"MEMRANK_AUTH_TOKEN_FILE": tokens, "MEMRANK_MAX_CONCURRENT_RPCS": 1,
                                       "MEMRANK_THREAD_POOL_SIZE": 1}))
    target = f"127.0.0.1:{running.port}"
    held = HeldBack(target, 20)
    try:
        # Refused while their requests are still held back: the server never waited for them.
        assert held.codes(timeout=3) == [grpc.StatusCode.UNAUTHENTICATED] * 20
        assert _rank(target, TOKEN) == "OK"
    finally:
        held.close()
        running.stop(0)


def test_a_request_not_sent_within_the_read_timeout_is_cut_off() -> None:
    running = create_server(_settings({"MEMRANK_REQUEST_READ_TIMEOUT_SECONDS": 0.5, "MEMRANK_MAX_CONCURRENT_RPCS": 1,
                                       "MEMRANK_THREAD_POOL_SIZE": 1}))
    target = f"127.0.0.1:{running.port}"
    start = time.monotonic()
    held = HeldBack(target, 3)
    try:
        assert _rank(target, None) == "OK"  # the held-back calls hold neither the one slot nor the one thread
        errors = [c.exception(timeout=5) for c in held.calls]
        assert 0.45 <= max(t for t, _ in held.ended) - start < 3
        assert {e.code() for e in errors} == {grpc.StatusCode.DEADLINE_EXCEEDED}
        assert all("server.request_read_timeout_seconds" in e.details() for e in errors)
    finally:
        held.close()
        running.stop(0)


def _stream_end(conn: h2.Connection, stream: int, timeout: float) -> h2.Frame | None:
    """The frame that ends ``stream`` (trailers or RST_STREAM), None when the connection closed first."""
    deadline = time.monotonic() + timeout
    while True:
        frame = conn.read(max(0.0, deadline - time.monotonic()))
        if frame is None or (frame.stream == stream and (
                frame.type == h2.RST_STREAM or (frame.type == h2.HEADERS and frame.flags & h2.END_STREAM))):
            return frame


def test_a_request_trickled_in_part_is_cut_off_at_the_read_timeout() -> None:
    running = create_server(_settings({"MEMRANK_REQUEST_READ_TIMEOUT_SECONDS": 0.5}))
    conn = h2.Connection(running.port)
    try:
        conn.start_call(1, RANK)
        # A gRPC message prefix promising 1,000 bytes, then 3 of them.
        conn.send(h2.DATA, 0, 1, b"\x00" + (1000).to_bytes(4, "big") + b"\x0a\x01q")
        start = time.monotonic()
        assert _stream_end(conn, 1, timeout=3) is not None
        assert 0.4 <= time.monotonic() - start < 3
    finally:
        conn.close()
        running.stop(0)


def test_one_connection_carries_at_most_max_streams_per_connection_calls() -> None:
    running = create_server(_settings({"MEMRANK_MAX_STREAMS_PER_CONNECTION": 4,
                                       "MEMRANK_REQUEST_READ_TIMEOUT_SECONDS": 0.5}))
    target = f"127.0.0.1:{running.port}"
    conn = h2.Connection(running.port)
    held = None
    try:
        settings = conn.read_until(h2.SETTINGS, timeout=3)
        assert settings is not None and settings.settings()[h2.MAX_CONCURRENT_STREAMS] == 4
        start = time.monotonic()
        held = HeldBack(target, 8)  # one connection: 4 reach the server, 4 wait in the client
        codes = held.codes(timeout=5)
        timeline = [(round(t - start, 2), c.code()) for t, c in held.ended]
        first = [code for t, code in timeline if t < 0.8 and code != grpc.StatusCode.UNAVAILABLE]
        assert first == [grpc.StatusCode.DEADLINE_EXCEEDED] * 4, timeline
        # The waiting calls get a stream as the first four end (the server counts the streams the client
        # sees open, so none is refused) and then time out on their own unread requests.
        assert set(codes) == {grpc.StatusCode.DEADLINE_EXCEEDED}, timeline
    finally:
        conn.close()
        if held is not None:
            held.close()
        running.stop(0)


def test_a_connection_without_calls_is_closed_after_the_idle_time() -> None:
    running = create_server(_settings({"MEMRANK_MAX_CONNECTION_IDLE_SECONDS": 0.5}))
    idle, busy = h2.Connection(running.port), h2.Connection(running.port)
    try:
        busy.start_call(1, HEALTH_CHECK)  # a call in flight (its request never comes): not idle
        start = time.monotonic()
        assert idle.read_until(h2.GOAWAY, timeout=3) is not None
        assert 0.4 <= time.monotonic() - start < 3
        assert idle.closed_within(2)
        assert not busy.closed_within(1)
    finally:
        idle.close()
        busy.close()
        running.stop(0)


def test_a_connection_is_closed_at_its_maximum_age_after_the_grace() -> None:
    running = create_server(_settings({"MEMRANK_MAX_CONNECTION_AGE_SECONDS": 0.5,
                                       "MEMRANK_MAX_CONNECTION_AGE_GRACE_SECONDS": 0.5,
                                       "MEMRANK_MAX_CONNECTION_IDLE_SECONDS": 0}))
    conn = h2.Connection(running.port)
    try:
        start = time.monotonic()
        conn.start_call(1, HEALTH_CHECK)  # a call that never sends its request (no read timeout for health)
        assert conn.read_until(h2.GOAWAY, timeout=3) is not None
        told = time.monotonic() - start
        assert 0.4 <= told < 2  # grpc jitters the age by up to 10%
        assert conn.closed_within(3)
        assert time.monotonic() - start - told >= 0.4  # the call in flight got the grace
    finally:
        conn.close()
        running.stop(0)


def test_a_peer_that_stops_answering_pings_is_disconnected() -> None:
    running = create_server(_settings({"MEMRANK_KEEPALIVE_TIME_SECONDS": 0.3,
                                       "MEMRANK_KEEPALIVE_TIMEOUT_SECONDS": 0.3}))
    live, dead = h2.Connection(running.port), h2.Connection(running.port, answer_pings=False)
    try:
        assert not live.closed_within(1.5)  # pinged although it has no call; answering, it stays
        assert live.pings >= 2
        start = time.monotonic()  # the dead peer's first ping went out at about 0.3 s, long unanswered
        assert dead.closed_within(2)
        assert dead.pings >= 1 and time.monotonic() - start < 1
    finally:
        live.close()
        dead.close()
        running.stop(0)


def test_a_ping_flood_is_refused_with_too_many_pings() -> None:
    """grpc's ping policy, kept: pings more often than every 5 minutes without data are strikes."""
    running = create_server(_settings({}))
    conn = h2.Connection(running.port)
    try:
        assert conn.read_until(h2.SETTINGS, timeout=3) is not None
        for _ in range(4):  # the first is allowed, three strikes close the connection
            conn.send(h2.PING, 0, 0, b"8 bytes!")
            time.sleep(0.05)
        goaway = conn.read_until(h2.GOAWAY, timeout=3)
        assert goaway is not None and goaway.payload[8:] == b"too_many_pings"
        assert conn.closed_within(2)
    finally:
        conn.close()
        running.stop(0)


def test_a_client_that_reads_no_response_holds_budget_until_its_connection_is_cut_off() -> None:
    """Issue #41 §2: a client granting no receive window held each response in the server for as long as its
    connection lived, while the call's bytes were already back in the budget (given back when the handler
    returned). Now they count until the response has left, and the connection is closed
    server.response_send_timeout_seconds after the handler answered; other callers are answered meanwhile."""
    registry = new_registry()
    running = create_server(_settings({"MEMRANK_RESPONSE_SEND_TIMEOUT_SECONDS": 1.5}), registry)
    budget = running.intake.budget
    target = f"127.0.0.1:{running.port}"
    data = rank_request(50).SerializeToString()
    conn = h2.Connection(running.port, receive_window=0)
    try:
        for stream in (1, 3, 5):
            conn.start_call(stream, RANK)
            conn.send_message(stream, data)
            assert conn.answered(stream, timeout=5)
        answered = time.monotonic()
        assert budget.used >= 3 * len(data)  # the responses have not left: their bytes are held
        assert _rank(target, None) == "OK"  # another caller is served
        assert conn.closed_within(5)
        waited = time.monotonic() - answered
        assert 0.5 <= waited < 4, waited  # the last call answered 1.5 s before the cut, the first a little more
        deadline = time.monotonic() + 2
        while budget.used and time.monotonic() < deadline:  # given back as grpc ends the calls
            time.sleep(0.02)
        assert budget.used == 0
        # Counted once per connection closed: the first call's timeout ended the other two.
        assert registry.get_sample_value("memrank_send_timeouts_total", {"method": "Rank"}) == 1
        assert _rank(target, None) == "OK"
    finally:
        conn.close()
        running.stop(0)


# (server.max_unsent_bytes_per_connection in responses, the calls the non-reading connection has answered): two
# responses stay under 2.5 and the third crosses; 0 is a quarter of the budget of 22 responses, 5.5 of them.
CAPS = [pytest.param(2.5, 3, id="set"), pytest.param(0, 6, id="default")]


@pytest.mark.parametrize(("cap_responses", "answered"), CAPS)
def test_a_connection_over_its_unsent_cap_is_refused_while_other_connections_are_served(
        cap_responses: float, answered: int, caplog: pytest.LogCaptureFixture) -> None:
    """Issue #41 §2: the responses one non-reading client held counted against the whole in-flight budget, so
    once it was full every other caller got RESOURCE_EXHAUSTED until the send timeout cut that client (with the
    budget below of 22 responses, fewer than the 32 streams one connection may hold open: it answered 20 and
    refused 18 of 22 other calls). Now one connection holds at most server.max_unsent_bytes_per_connection of
    unsent responses: past it, its own new calls are refused, naming the setting and its limit, counted, and
    logged once, while a well-behaved client on another connection has every call answered."""
    data = rank_request(50).SerializeToString()
    running = create_server(_settings({}), new_registry())  # the response's size: the same call, read
    try:
        with _channel(f"127.0.0.1:{running.port}") as channel:
            response = len(channel.unary_unary(RANK)(data, timeout=10))
    finally:
        running.stop(0)
    budget = 22 * response
    cap = int(cap_responses * response) or budget // 4
    registry = new_registry()
    running = create_server(_settings({
        "MEMRANK_RESPONSE_SEND_TIMEOUT_SECONDS": 20, "MEMRANK_MAX_INFLIGHT_BYTES": budget,
        "MEMRANK_MAX_MESSAGE_BYTES": budget, "MEMRANK_MAX_UNSENT_BYTES_PER_CONNECTION": int(cap_responses * response)}),
        registry)
    target = f"127.0.0.1:{running.port}"
    conn = h2.Connection(running.port, receive_window=0)
    peer = f"ipv4:127.0.0.1:{conn.sock.getsockname()[1]}"  # grpc's name for this connection
    others: list[str] = []
    try:
        streams = range(1, 1 + 2 * answered, 2)
        assert [conn.answered(stream, timeout=10) for stream in _calls(conn, data, streams)] == [True] * answered
        assert abs(running.intake.unsent.held(peer) - answered * response) <= answered  # sizes differ by a byte
        for stream in range(streams.stop, streams.stop + 2 * 40, 2):  # more than the budget could hold
            conn.start_call(stream, RANK)
            conn.send_message(stream, data)
            end = _stream_end(conn, stream, timeout=10)
            assert end is not None and end.type == h2.HEADERS, end  # refused at once, its status sent
            assert b"server.max_unsent_bytes_per_connection" in end.payload and str(cap).encode() in end.payload
            if stream % 8 == 1:
                others.append(_rank(target, None))
        others += [_rank(target, None) for _ in range(5)]
        assert others == ["OK"] * len(others)
        assert registry.get_sample_value("memrank_unsent_refusals_total", {"method": "Rank"}) == 40
        assert running.intake.budget.used >= answered * response - answered
    finally:
        conn.close()
        running.stop(0)
    crossed = [r for r in caplog.records if "max_unsent_bytes_per_connection" in r.getMessage()]
    assert len(crossed) == 1 and crossed[0].levelname == "WARNING"


def _calls(conn: h2.Connection, data: bytes, streams: range) -> Iterator[int]:
    """Start a Rank call with ``data`` on each stream in turn, yielding the stream once its request is sent."""
    for stream in streams:
        conn.start_call(stream, RANK)
        conn.send_message(stream, data)
        yield stream
