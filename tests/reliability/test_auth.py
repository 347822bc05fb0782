"""Bearer-token authentication: tokens from a file reloaded on change, open health/reflection, no leaks."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from memrank.client import RankingClient, RankingError
from memrank.config import load_settings
from memrank.core.errors import ConfigError
from memrank.grpc.auth import REFUSAL, TokenFile, open_matcher
from memrank.grpc.running import Running
from memrank.grpc.server import create_server
from tests.support.servers import loopback_settings

GOOD, OTHER = "s3cret-token-A", "rotated-token-B"
REQUEST = {"candidates": [{"id": "a", "retrievalScore": 0.4, "importance": 0.5}]}


def _start(tokens: Path, open_methods: str | None = None) -> Running:
    s = loopback_settings()
    security = replace(s.security, auth_token_file=str(tokens))
    if open_methods is not None:
        security = replace(security, auth_open_methods=open_methods)
    return create_server(replace(s, security=security))


@pytest.fixture()
def tokens(tmp_path: Path) -> Path:
    path = tmp_path / "tokens"
    path.write_text(f"# accepted tokens\n{GOOD}\n\n")
    return path


@pytest.fixture()
def authed(tokens: Path) -> Iterator[Running]:
    running = _start(tokens)
    yield running
    running.stop(0)


def _refused(target: str, token: str | None, metadata_value: str | None = None) -> RankingError:
    with RankingClient(target, token=token, retries=0) as client:
        if metadata_value is not None:
            client._metadata = (("authorization", metadata_value),)
        with pytest.raises(RankingError) as err:
            client.rank(REQUEST)
    return err.value


def test_a_valid_bearer_token_is_let_through(authed: Running) -> None:
    with RankingClient(f"127.0.0.1:{authed.port}", token=GOOD) as client:
        assert [m.id for m in client.rank(REQUEST).selected] == ["a"]
        assert client.list_profiles().profiles


@pytest.mark.parametrize(("token", "raw"), [
    (None, None), ("wrong", None), (GOOD + "x", None), (GOOD[:-1], None), ("", None),
    (None, GOOD), (None, f"Basic {GOOD}"), (None, "Bearer "), (None, f"Bearer {GOOD} extra"),
])
def test_refusals_are_unauthenticated_without_detail(authed: Running, token: str | None, raw: str | None) -> None:
    err = _refused(f"127.0.0.1:{authed.port}", token, raw)
    assert err.code == grpc.StatusCode.UNAUTHENTICATED
    assert err.message == REFUSAL  # the same words whatever was wrong; the token is never echoed
    assert not err.violations and not err.reason


def test_unknown_methods_are_refused_the_same_way(authed: Running) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{authed.port}") as channel:
        call = channel.unary_unary("/memrank.v1.Secret/Probe", request_serializer=None, response_deserializer=None)
        with pytest.raises(grpc.RpcError) as err:
            call(b"", timeout=5)
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_health_and_reflection_are_open_by_default(authed: Running) -> None:
    target = f"127.0.0.1:{authed.port}"
    with RankingClient(target) as client:
        assert client.health() == "SERVING"
    with grpc.insecure_channel(target) as channel:
        assert "memrank.v1.RankingService" in ProtoReflectionDescriptorDatabase(channel).get_services()


def test_health_can_be_closed_too(tokens: Path) -> None:
    running = _start(tokens, open_methods="")
    try:
        with RankingClient(f"127.0.0.1:{running.port}", retries=0) as client, pytest.raises(RankingError) as err:
            client.health()
        assert err.value.code == grpc.StatusCode.UNAUTHENTICATED
        with RankingClient(f"127.0.0.1:{running.port}", token=GOOD) as client:
            assert client.health() == "SERVING"
    finally:
        running.stop(0)


def test_the_token_file_is_reloaded_when_it_changes(authed: Running, tokens: Path) -> None:
    target = f"127.0.0.1:{authed.port}"
    assert _refused(target, OTHER).code == grpc.StatusCode.UNAUTHENTICATED
    staged = tokens.with_name(".tokens.new")  # replaced atomically, as a Secret volume update does
    staged.write_text(f"{OTHER}\n")
    os.replace(staged, tokens)
    deadline = time.monotonic() + 5
    while True:
        with RankingClient(target, token=OTHER, retries=0) as client:
            try:
                client.rank(REQUEST)
                break
            except RankingError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    assert _refused(target, GOOD).code == grpc.StatusCode.UNAUTHENTICATED


def test_a_broken_or_empty_token_file_keeps_the_last_good_tokens(tmp_path: Path) -> None:
    now = [0.0]
    path = tmp_path / "tokens"
    path.write_text(f"{GOOD}\n")
    tokens = TokenFile(str(path), interval=1.0, clock=lambda: now[0])
    path.write_text("# emptied by mistake\n")
    now[0] += 2
    assert tokens.accepts(GOOD)
    path.unlink()
    now[0] += 2
    assert tokens.accepts(GOOD)
    path.write_text(f"{OTHER}\n")
    now[0] += 2
    assert tokens.accepts(OTHER) and not tokens.accepts(GOOD)


def test_a_token_file_without_tokens_is_refused_at_start(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text("# nothing\n\n")
    with pytest.raises(ConfigError, match=r"security.auth_token_file: .* holds no token"):
        TokenFile(str(path))


def test_a_missing_token_file_is_refused_at_start_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"security.auth_token_file: cannot read"):
        _start(tmp_path / "absent")


def test_open_methods_match_services_and_exact_methods() -> None:
    is_open = open_matcher("grpc.health.v1.Health, /memrank.v1.RankingService/ListProfiles")
    assert is_open("/grpc.health.v1.Health/Check") and is_open("/grpc.health.v1.Health/Watch")
    assert is_open("/memrank.v1.RankingService/ListProfiles")
    assert not is_open("/memrank.v1.RankingService/Rank")
    assert not is_open("/grpc.health.v1.HealthX/Check") and not is_open("grpc.health.v1.Health")


def test_auth_settings_come_from_the_helm_chart_environment(tokens: Path) -> None:
    s = load_settings(env={"MEMRANK_AUTH_TOKEN_FILE": str(tokens), "MEMRANK_AUTH_OPEN_METHODS": ""})
    assert s.security.auth_token_file == str(tokens)
    assert s.security.auth_open_methods == ""
    named = r"security\.auth_open_methods \(set by MEMRANK_AUTH_OPEN_METHODS\): 'not a name'"
    with pytest.raises(ConfigError, match=named):
        load_settings(env={"MEMRANK_AUTH_OPEN_METHODS": "not a name"})
