"""AsyncRankingClient (grpc.aio) against live servers on loopback: RankingClient's methods, options (deadline, token,
TLS and mutual TLS, the shared service config) and errors."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest

from memrank.client import (
    AdmissionDecision,
    AsyncRankingClient,
    Candidate,
    InvalidArgument,
    RankingClient,
    RankingError,
    RankRequest,
    ScoreAdmissionRequest,
    Timestamp,
    Unauthenticated,
    Unavailable,
    service_config,
    tls_credentials,
)
from memrank.config import DecisionLogSettings
from memrank.grpc.running import Running
from memrank.grpc.server import create_server
from tests.server.test_client_deadline import REQUEST, Flaky
from tests.support.servers import free_port, loopback_settings

TOKEN = "aio-token"


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def request() -> RankRequest:
    return RankRequest(request_id="aio", query="tea", reference_time=Timestamp(seconds=1_780_000_000), candidates=[
        Candidate(id="m1", content="The user prefers green tea.", retrieval_score=0.8, importance=0.5),
        Candidate(id="m2", content="The user lives in Berlin.", retrieval_score=0.5, importance=0.5)])


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """A server with the decision log on (for record_feedback) and a bearer token."""
    folder = tmp_path_factory.mktemp("aio")
    (folder / "tokens").write_text(f"{TOKEN}\n")
    s = loopback_settings()
    running = create_server(replace(
        s, decision_log=DecisionLogSettings(enabled=True, sink="file", path=str(folder / "decisions.jsonl")),
        security=replace(s.security, auth_token_file=str(folder / "tokens"))))
    yield running
    running.stop(0)


def test_every_method_answers_as_the_blocking_clients_do(live_server: Running) -> None:
    target = f"127.0.0.1:{live_server.port}"

    async def calls() -> tuple[Any, ...]:
        async with AsyncRankingClient(target, timeout=10) as client:
            ranked = await client.rank(request())
            as_dict = await client.rank({"requestId": "aio", "query": "tea", "referenceTime": "2026-05-28T20:26:40Z",
                                         "candidates": [
                {"id": "m1", "content": "The user prefers green tea.", "retrievalScore": 0.8, "importance": 0.5},
                {"id": "m2", "content": "The user lives in Berlin.", "retrievalScore": 0.5, "importance": 0.5}]})
            admission = await client.score_admission(ScoreAdmissionRequest(
                candidate=Candidate(id="a1", content="The user is allergic to peanuts.", importance=0.9)))
            profiles = await client.list_profiles()
            return ranked, as_dict, admission, profiles, await client.health(), \
                await client.health("memrank.v1.RankingService")

    ranked, as_dict, admission, profiles, health, service_health = run(calls())
    with RankingClient(target, timeout=10) as sync:
        assert ranked == as_dict == sync.rank(request())
        assert profiles == sync.list_profiles()
    assert admission.decision != AdmissionDecision.ADMISSION_DECISION_UNSPECIFIED
    assert (health, service_health) == ("SERVING", "SERVING")


def test_packed_embeddings_give_the_same_answer(live_server: Running) -> None:
    target = f"127.0.0.1:{live_server.port}"
    req = request()
    for c, row in zip(req.candidates, ([1.0, 0.0], [0.0, 1.0]), strict=True):
        c.embedding.extend(row)

    async def both() -> tuple[Any, Any]:
        async with AsyncRankingClient(target) as plain, AsyncRankingClient(target, pack_embeddings=True) as packs:
            return await plain.rank(req), await packs.rank(req)

    unpacked, packed = run(both())
    with RankingClient(target) as sync:
        assert packed == unpacked == sync.rank(req, embeddings=np.eye(2, dtype=np.float32))
    assert len(req.candidates[0].embedding) == 2  # the caller's message is not modified


def test_feedback_token_and_a_client_that_outlives_its_event_loop(logged: Running) -> None:
    client = AsyncRankingClient(f"127.0.0.1:{logged.port}", token=TOKEN)

    async def feedback() -> Any:
        resp = await client.rank(replace_log(request()))
        assert resp.decision_logged
        return await client.record_feedback(resp, {"m1": 3, "m2": 0}, labeler="python-aio")

    first = run(feedback())
    second = run(feedback())  # another event loop: the client opens a channel on it
    assert first.label_count == second.label_count == 2 and len(first.feedback_id) == 64

    async def refused(token: str | None) -> RankingError:
        async with AsyncRankingClient(f"127.0.0.1:{logged.port}", token=token) as c:
            with pytest.raises(RankingError) as err:
                await c.rank(request())
            return err.value

    assert type(run(refused(None))) is Unauthenticated
    assert type(run(refused("wrong"))) is Unauthenticated


def replace_log(req: RankRequest) -> RankRequest:
    req.log_decision = True
    return req


def test_errors_are_the_same_tree(live_server: Running) -> None:
    target = f"127.0.0.1:{live_server.port}"
    bad = request()
    bad.candidates[1].id = "m1"

    async def failures() -> list[RankingError]:
        out = []
        async with AsyncRankingClient(target) as client:
            for call in (client.rank(bad), client.rank(request(), timeout=0),
                         client.record_feedback("0" * 64, {"m1": 3})):
                try:
                    await call
                except RankingError as err:
                    out.append(err)
        async with AsyncRankingClient(f"127.0.0.1:{free_port()}", retries=0) as nobody:
            try:
                await nobody.list_profiles()
            except RankingError as err:
                out.append(err)
        return out

    invalid, late, no_log, nobody = run(failures())
    assert type(invalid) is InvalidArgument and invalid.fields == ("candidates[1].id",)
    assert invalid.reason == "INVALID_REQUEST"
    # grpc.aio reports an already expired deadline as DEADLINE_EXCEEDED, or now and then as CANCELLED ("call
    # cancelled or deadline exceeded"): either is a plain RankingError.
    assert type(late) is RankingError and late.code in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED)
    assert type(no_log) is RankingError and no_log.code == grpc.StatusCode.FAILED_PRECONDITION
    assert type(nobody) is Unavailable


def test_the_service_config_retries_unavailable_within_the_deadline(flaky: Flaky) -> None:
    async def succeed() -> Any:
        async with AsyncRankingClient(flaky.address, backoff=0.01) as client:
            assert client.service_config == service_config(backoff=0.01)
            return await client.rank(REQUEST)

    flaky.fail_first = 2
    assert [m.id for m in run(succeed()).selected] == ["a"]
    assert flaky.attempts == 3

    async def bounded() -> tuple[float, RankingError]:
        async with AsyncRankingClient(flaky.address, timeout=0.4, retries=4, backoff=0.01) as client:
            started = time.monotonic()
            try:
                await client.rank(REQUEST)
            except RankingError as err:
                return time.monotonic() - started, err
        raise AssertionError("the call succeeded")

    # Every attempt answers UNAVAILABLE after 150 ms: five would take at least 750 ms.
    flaky.fail_first, flaky.fail_after, flaky.attempts = 100, 0.15, 0
    took, err = run(bounded())
    assert err.code in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE)
    assert took < 0.75, f"the call outlived its 0.4 s deadline: {took:.3f} s"
    assert 2 <= flaky.attempts <= 3, flaky.attempts


@pytest.fixture()
def flaky(live_server: Running) -> Iterator[Flaky]:
    proxy = Flaky(f"127.0.0.1:{live_server.port}")
    yield proxy
    proxy.close()


def test_tls_and_mutual_tls(tmp_path: Path) -> None:
    pytest.importorskip("cryptography")
    from tests.support.certs import make_certificates

    certs = make_certificates(tmp_path)
    for mutual in (False, True):
        s = loopback_settings()
        running = create_server(replace(s, security=replace(
            s.security, tls_cert_file=str(certs.server_cert), tls_key_file=str(certs.server_key),
            tls_client_ca_file=str(certs.ca) if mutual else None)))
        try:
            creds = (tls_credentials(str(certs.ca), str(certs.client_cert), str(certs.client_key)) if mutual
                     else tls_credentials(str(certs.ca)))

            target = f"127.0.0.1:{running.port}"

            async def call(target: str, credentials: grpc.ChannelCredentials | None) -> str:
                async with AsyncRankingClient(target, credentials=credentials, retries=0, timeout=3) as client:
                    return next(m.id for m in (await client.rank(request())).selected)

            assert run(call(target, creds)) == "m1"
            with pytest.raises(Unavailable):  # no client certificate / plaintext
                run(call(target, tls_credentials(str(certs.ca)) if mutual else None))
        finally:
            running.stop(0)
