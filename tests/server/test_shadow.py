"""The server's shadow profile on live in-process servers: the answer is byte for byte the one without it, the
agreement histograms hold the values counted by hand, and a caller's own shadow_profile wins."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import grpc
import pytest
from google.protobuf import json_format

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.config import Settings, ShadowSettings
from memrank.grpc.running import Running
from memrank.grpc.server import create_server
from memrank.metrics.registry import Registry, new_registry
from tests.support.servers import loopback_settings

KINDS = ("fact", "decision", "preference", "attempt", "failure")
CANDIDATES = [{"id": f"m{i}", "content": f"memory {i} about {'tea' if i % 3 else 'coffee'} and the deploy {i * 7 % 5}",
               "retrievalScore": (i * 37 % 100) / 100, "importance": (i * 53 % 100) / 100, "kind": KINDS[i % 5],
               "createdAt": f"2026-0{1 + i % 5}-0{1 + i % 7}T00:00:00Z"} for i in range(24)]
RANK = "/memrank.v1.RankingService/Rank"


def request(request_id: str = "r1", **fields: Any) -> bytes:
    body = {"requestId": request_id, "query": "tea deploy", "referenceTime": "2026-06-01T12:00:00Z",
            "candidates": CANDIDATES, "budget": {"maxItems": 8}, "explain": "EXPLAIN_LEVEL_FULL", **fields}
    return bytes(json_format.ParseDict(body, pb.RankRequest()).SerializeToString())


class Server:
    def __init__(self, settings: Settings) -> None:
        self.registry: Registry = new_registry()
        self.running: Running = create_server(settings, self.registry)
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.running.port}")
        self.rank_bytes = self.channel.unary_unary(RANK)  # no (de)serializers: bytes in, bytes out

    def rank(self, data: bytes) -> pb.RankResponse:
        return pb.RankResponse.FromString(self.rank_bytes(data, timeout=10))

    def samples(self, name: str) -> list[tuple[dict[str, str], float]]:
        return [(s.labels, s.value) for f in self.registry.collect() for s in f.samples if s.name == name]

    def close(self) -> None:
        self.channel.close()
        self.running.stop(0)


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Server, Server]]:
    base = loopback_settings()
    plain, shadowed = Server(base), Server(replace(base, shadow=ShadowSettings("assistant", 1.0)))
    yield plain, shadowed
    plain.close()
    shadowed.close()


def ranked(response: pb.RankResponse) -> list[str]:
    return [m.id for m in sorted(response.selected, key=lambda m: m.rank)]


def inversions(order: list[str], other: list[str]) -> int:
    """Adjacent swaps a bubble sort makes to put ``order`` in ``other``'s order."""
    pos = {x: i for i, x in enumerate(other)}
    keys, swaps = [pos[x] for x in order], 0
    for end in range(len(keys) - 1, 0, -1):
        for i in range(end):
            if keys[i] > keys[i + 1]:
                keys[i], keys[i + 1] = keys[i + 1], keys[i]
                swaps += 1
    return swaps


def test_the_answer_is_byte_for_byte_the_one_without_the_shadow(servers: tuple[Server, Server]) -> None:
    plain, shadowed = servers
    for rid in ("r1", "r2", ""):
        assert shadowed.rank_bytes(request(rid), timeout=10) == plain.rank_bytes(request(rid), timeout=10)
    assert not shadowed.rank(request()).HasField("shadow")


def test_the_agreement_histograms_hold_the_hand_counted_values(servers: tuple[Server, Server]) -> None:
    plain, shadowed = servers
    labels = {"profile": "default", "shadow_profile": "assistant"}

    def series(name: str) -> dict[str, float]:  # le (or "") -> value, for the pair's series
        return {lab.get("le", ""): v for lab, v in shadowed.samples(name)
                if {k: lab[k] for k in labels} == labels}

    before = {name: series(name) for name in ("memrank_shadow_overlap_at_k_sum", "memrank_shadow_kendall_tau_bucket")}
    served = ranked(shadowed.rank(request("agree")))
    shadow = ranked(plain.rank(request("agree", profile="assistant")))  # the shadow's answer, served
    k = len(served)
    common = [x for x in served if x in shadow]
    overlap = len(set(served) & set(shadow[:k])) / k
    pairs = len(common) * (len(common) - 1) // 2
    tau = 1 - 2 * inversions(common, [x for x in shadow if x in common]) / pairs
    assert (k, len(common)) == (8, 5) and -1 < tau < 1  # the case is not a trivial one
    overlap_sum = series("memrank_shadow_overlap_at_k_sum")[""] - before["memrank_shadow_overlap_at_k_sum"].get("", 0)
    assert overlap_sum == pytest.approx(overlap)
    # tau may be negative, so its histogram has no _sum (OpenMetrics): the one observation is in every bucket from
    # the first bound >= tau on, and in none below it
    after = series("memrank_shadow_kendall_tau_bucket")
    grew = {le: after[le] - before["memrank_shadow_kendall_tau_bucket"].get(le, 0) for le in after}
    assert grew == {le: float(tau <= float(le)) for le in after}


def test_a_callers_own_shadow_profile_wins(servers: tuple[Server, Server]) -> None:
    _, shadowed = servers
    response = shadowed.rank(request("own", shadowProfile="support"))
    assert response.shadow.profile == "support"
    assert response.shadow.selected_ids == ranked(servers[0].rank(request("own", profile="support")))
    counted = {lab["shadow_profile"] for lab, v in shadowed.samples("memrank_shadow_overlap_at_k_count") if v}
    assert "support" in counted


def test_sample_rate_shadows_the_request_ids_in_the_share() -> None:
    server = Server(replace(loopback_settings(), shadow=ShadowSettings("assistant", 0.3)))
    try:
        ids = [f"call-{i}" for i in range(40)]
        for rid in ids:
            server.rank(request(rid))
        # in the share: the first 8 bytes of SHA-256(id), big-endian, below 0.3 x 2^64
        expected = sum(int.from_bytes(hashlib.sha256(rid.encode()).digest()[:8], "big") < 0.3 * 2 ** 64
                       for rid in ids)
        counted = sum(v for _, v in server.samples("memrank_shadow_overlap_at_k_count"))
        assert counted == expected and 0 < expected < 40
    finally:
        server.close()


def test_the_go_formula_with_a_score_the_shadow_cannot_read_is_not_shadowed() -> None:
    server = Server(replace(loopback_settings(), shadow=ShadowSettings("default", 1.0)))
    try:
        outside = [dict(c, retrievalScore=1.5) if c["id"] == "m3" else c for c in CANDIDATES]
        server.rank(request("go", profile="agent-observer", candidates=outside))
        assert sum(v for _, v in server.samples("memrank_shadow_overlap_at_k_count")) == 0
        server.rank(request("go", profile="agent-observer"))  # every score in [0, 1]: shadowed
        assert sum(v for _, v in server.samples("memrank_shadow_overlap_at_k_count")) == 1
    finally:
        server.close()


def test_inversions_count_the_discordant_pairs() -> None:
    order, other = ["a", "b", "c", "d"], ["b", "d", "a", "c"]
    discordant = sum((order.index(x) - order.index(y)) * (other.index(x) - other.index(y)) < 0
                     for x, y in itertools.combinations(order, 2))
    assert inversions(order, other) == discordant == 3
