"""What ``memrank.client`` offers a caller: every message and enum of memrank.v1 (so nobody imports memrank._gen), a
light import (no server code), and errors as a small tree chosen from the status code, against live servers."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import grpc
import pytest

import memrank.client as client_module
from memrank._gen.v1 import ranking_pb2
from memrank.client import (
    Budget,
    Candidate,
    FieldError,
    InvalidArgument,
    LayerPolicy,
    RankingClient,
    RankingError,
    RankRequest,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
)
from memrank.grpc.running import Running
from memrank.grpc.server import create_server
from tests.support.servers import free_port, loopback_settings

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "s3cret-token"
# What a client has no use for: the configuration (and yaml), metrics, the scoring pipeline, the server.
NOT_FOR_A_CLIENT = ("memrank.config", "yaml", "prometheus_client", "memrank.core.pipeline", "memrank.core.scoring",
                    "memrank.core.signals", "memrank.core.selection", "memrank.profiles", "memrank.metrics",
                    "memrank.grpc.server", "memrank.grpc.service", "memrank.grpc.tls")


def good() -> RankRequest:
    return RankRequest(request_id="py-surface", query="postgres ledger", budget=Budget(max_items=5),
                       layers=[LayerPolicy(name="facts", share=1.0)],
                       candidates=[Candidate(id="m1", layer="facts", content="The ledger runs on Postgres 16",
                                             retrieval_score=0.6, importance=0.5)])


def replace_profile(request: RankRequest, profile: str) -> RankRequest:
    out = RankRequest()
    out.CopyFrom(request)
    out.profile = profile
    return out


def test_every_message_and_enum_of_the_api_comes_from_memrank_client() -> None:
    names = set(ranking_pb2.DESCRIPTOR.message_types_by_name) | set(ranking_pb2.DESCRIPTOR.enum_types_by_name)
    missing = sorted(n for n in names if getattr(client_module, n, None) is not getattr(ranking_pb2, n))
    assert missing == [], f"not re-exported by memrank.client: {missing}"
    assert names <= set(client_module.__all__)
    assert all(hasattr(client_module, n) for n in client_module.__all__)


def test_importing_the_client_loads_no_server_code() -> None:
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(ROOT / "server"), os.environ.get("PYTHONPATH", "")])}
    code = "import json, sys, memrank.client; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         timeout=60).stdout
    loaded = set(json.loads(out))
    heavy = sorted(m for m in loaded if any(m == x or m.startswith(x + ".") for x in NOT_FOR_A_CLIENT))
    assert heavy == [], f"import memrank.client loaded {heavy}"
    assert "memrank.client" in loaded and "memrank.client.tls" in loaded


def test_an_error_is_made_as_the_subclass_of_its_code() -> None:
    cases = {grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument, grpc.StatusCode.UNAVAILABLE: Unavailable,
             grpc.StatusCode.UNAUTHENTICATED: Unauthenticated, grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
             grpc.StatusCode.DEADLINE_EXCEEDED: RankingError, grpc.StatusCode.FAILED_PRECONDITION: RankingError}
    for code, cls in cases.items():
        err = RankingError(code, "no", [FieldError("candidates[0].id", "empty")], "INVALID_REQUEST")
        assert type(err) is cls and isinstance(err, RankingError)
        assert (err.code, err.message, err.fields, err.reason) == (code, "no", ("candidates[0].id",), "INVALID_REQUEST")
        err.add_note("a note")
        again = pickle.loads(pickle.dumps(err))
        assert type(again) is cls and (again.code, again.violations, again.reason, str(again), again.__notes__) == \
            (code, err.violations, "INVALID_REQUEST", str(err), ["a note"])
    assert type(InvalidArgument(grpc.StatusCode.INVALID_ARGUMENT, "x")) is InvalidArgument


def test_refusals_raise_invalid_argument_with_the_servers_violations(client: RankingClient) -> None:
    bad = good()
    bad.candidates.add(id="m1", content="again")
    with pytest.raises(InvalidArgument) as err:
        client.rank(bad)
    assert err.value.fields == ("candidates[1].id",) and err.value.reason == "INVALID_REQUEST"
    assert err.value.violations[0].description
    with pytest.raises(InvalidArgument) as unknown:
        client.rank(replace_profile(good(), "no-such-profile"))
    assert unknown.value.reason == "UNKNOWN_PROFILE"


def test_no_server_is_unavailable_and_other_codes_stay_plain(client: RankingClient) -> None:
    with RankingClient(f"127.0.0.1:{free_port()}", retries=0) as nobody, pytest.raises(Unavailable):
        nobody.health()
    with pytest.raises(RankingError) as late:
        client.rank(good(), timeout=0)
    # A deadline of 0: grpc's own DEADLINE_EXCEEDED, or, when the server saw the call first, its CANCELLED for a
    # caller that has gone (the server stops work on it); either way a plain RankingError.
    assert type(late.value) is RankingError
    assert late.value.code in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED)
    with pytest.raises(RankingError) as off:
        client.record_feedback("0" * 64, {"m1": 3})  # this server keeps no decision log
    assert type(off.value) is RankingError and off.value.code == grpc.StatusCode.FAILED_PRECONDITION


@pytest.fixture(scope="module")
def authed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    tokens = tmp_path_factory.mktemp("auth") / "tokens"
    tokens.write_text(f"{TOKEN}\n")
    s = loopback_settings()
    running = create_server(replace(s, security=replace(s.security, auth_token_file=str(tokens))))
    yield running
    running.stop(0)


def test_a_missing_or_wrong_token_is_unauthenticated(authed: Running) -> None:
    target = f"127.0.0.1:{authed.port}"
    for token in (None, "wrong"):
        with RankingClient(target, token=token) as c, pytest.raises(Unauthenticated):
            c.rank(good())
    with RankingClient(target, token=TOKEN) as c:
        assert [m.id for m in c.rank(good()).selected] == ["m1"]


def test_an_oversize_request_is_resource_exhausted() -> None:
    running = create_server(loopback_settings(max_message_bytes=64 * 1024))
    try:
        big = good()
        big.candidates[0].content = "x" * 100_000
        with RankingClient(f"127.0.0.1:{running.port}") as c:
            with pytest.raises(ResourceExhausted):
                c.rank(big)
            assert c.rank(good()).selected[0].id == "m1"
    finally:
        running.stop(0)
