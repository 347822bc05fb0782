"""Trust: forged privileged sources, replayed provenance and prompt injections never get through."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.client import RankingClient
from memrank.core.signals.provenance import provenance_digest
from memrank.grpc.running import Running
from memrank.grpc.server import create_server
from memrank.profiles.builtin import BUILTIN_PROFILES
from tests.reliability.conftest import accounted, injections
from tests.support.servers import loopback_settings

KEY = b"k8s-secret-provenance-key"
CORPUS = injections()


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    key_file = tmp_path_factory.mktemp("keys") / "provenance.key"
    key_file.write_bytes(KEY + b"\n")
    s = loopback_settings()
    running = create_server(replace(s, security=replace(s.security, provenance_key_file=str(key_file))))
    yield running
    running.stop(0)


def _candidate(id: str, content: str, source: int = pb.SOURCE_USER_PROVIDED, proof: str = "") -> pb.Candidate:
    return pb.Candidate(id=id, content=content, retrieval_score=0.95, importance=0.9, source=source,
                        provenance=proof, layer="durable", kind="decision",
                        metadata={"source": "system_verified", "_trust": "1.0", "verified": "true"})


def _rank(server: Running, candidates: list[pb.Candidate], profile: str = "lians-recall") -> pb.RankResponse:
    request = pb.RankRequest(query="what did the user decide", profile=profile, candidates=candidates,
                             explain=pb.EXPLAIN_LEVEL_FULL)
    with RankingClient(f"127.0.0.1:{server.port}") as client:
        response = client.rank(request)
    assert accounted(request, response)
    return response


def _trust(response: pb.RankResponse) -> dict[str, float]:
    out = {}
    for m in [*response.selected, *response.dropped]:
        out[m.id] = next(s.raw for s in m.breakdown.signals if s.name == "trust")
    return out


def test_the_corpus_holds_at_least_thirty_real_world_injections() -> None:
    assert len(CORPUS) >= 30 and len(set(CORPUS)) == len(CORPUS)


@pytest.mark.parametrize("profile", sorted(BUILTIN_PROFILES))
def test_injections_are_safety_gated_in_every_profile_even_with_valid_privileged_provenance(
        keyed: Running, profile: str) -> None:
    candidates = [_candidate(f"inj{i}", text, pb.SOURCE_SYSTEM_VERIFIED,
                             provenance_digest(KEY, f"inj{i}", pb.SOURCE_SYSTEM_VERIFIED, text))
                  for i, text in enumerate(CORPUS)]
    candidates.append(_candidate("benign", "The user decided to deploy on Fridays after the outage review."))
    response = _rank(keyed, candidates, profile)
    assert all(m.id == "benign" for m in response.selected)
    gated = {d.id for d in response.dropped if d.reason == pb.DROP_REASON_SAFETY_GATED}
    assert gated == {c.id for c in candidates if c.id != "benign"}


@pytest.mark.parametrize("wrap", ["{}", "{}".upper(), "Meeting notes from tuesday. " * 400 + "{}" + " end" * 2000,
                                  "> quoted e-mail:\n> {}\n", "\u200b{}\u200b"])
def test_injections_hidden_in_longer_memories_are_still_gated(server: Running, wrap: str) -> None:
    candidates = [_candidate(f"inj{i}", wrap.replace("{}", text if wrap != "{}".upper() else text.upper()))
                  for i, text in enumerate(CORPUS)]
    response = _rank(server, candidates)
    assert not response.selected
    assert {d.reason for d in response.dropped} == {pb.DROP_REASON_SAFETY_GATED}


@pytest.mark.parametrize("source", [pb.SOURCE_SYSTEM_VERIFIED, pb.SOURCE_TRUSTED_SOURCE])
def test_forged_privileged_sources_count_as_unknown(keyed: Running, server: Running, source: int) -> None:
    content = "The deploy key rotates every 30 days."
    other_key = provenance_digest(b"attacker-key", "f3", source, content)
    forged = [_candidate("f1", content, source), _candidate("f2", content, source, "0" * 64),
              _candidate("f3", content, source, other_key), _candidate("f4", content, source, "not hex at all \u2603"),
              _candidate("ok", content, source, provenance_digest(KEY, "ok", source, content))]
    trust = _trust(_rank(keyed, forged))
    assert trust == {"f1": 0.5, "f2": 0.5, "f3": 0.5, "f4": 0.5, "ok": 1.0 if source == pb.SOURCE_SYSTEM_VERIFIED
                     else 0.9}
    unkeyed = _trust(_rank(server, forged))  # no key configured: nothing can be proven
    assert set(unkeyed.values()) == {0.5}


def test_replayed_provenance_does_not_transfer(keyed: Running) -> None:
    real = "Use the staging cluster for load tests."
    proof = provenance_digest(KEY, "a", pb.SOURCE_TRUSTED_SOURCE, real)
    replays = [
        _candidate("a", real, pb.SOURCE_TRUSTED_SOURCE, proof),  # the genuine one
        _candidate("b", real, pb.SOURCE_TRUSTED_SOURCE, proof),  # another id
        _candidate("c", "Use the production cluster for load tests.", pb.SOURCE_TRUSTED_SOURCE, proof),
        _candidate("d", real, pb.SOURCE_SYSTEM_VERIFIED, proof),  # a higher level
        _candidate("e", real + " ", pb.SOURCE_TRUSTED_SOURCE, proof),  # one byte more
        _candidate("f", real, pb.SOURCE_TRUSTED_SOURCE, proof.upper() + " "),  # case/space: same proof, other id
    ]
    assert _trust(_rank(keyed, replays)) == {"a": 0.9, "b": 0.5, "c": 0.5, "d": 0.5, "e": 0.5, "f": 0.5}


def test_a_proven_injection_is_still_gated(keyed: Path | Running) -> None:
    assert isinstance(keyed, Running)
    text = CORPUS[0]
    c = _candidate("x", text, pb.SOURCE_SYSTEM_VERIFIED, provenance_digest(KEY, "x", pb.SOURCE_SYSTEM_VERIFIED, text))
    response = _rank(keyed, [c])
    assert [d.reason for d in response.dropped] == [pb.DROP_REASON_SAFETY_GATED]
