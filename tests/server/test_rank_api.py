"""Rank, ScoreAdmission and ListProfiles through a real server on loopback."""

from __future__ import annotations

import math
import time

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from memrank._gen.v1 import ranking_pb2 as pb
from memrank._gen.v1 import ranking_service_pb2_grpc as pb_grpc
from memrank.client import RankingClient, RankingError
from memrank.grpc.running import Running

REF = "2026-06-01T12:00:00Z"


def _candidates(n: int) -> list[dict[str, object]]:
    return [
        {"id": f"m{i}", "content": f"memory number {i} about tea and travel", "retrievalScore": (i % 10) / 10,
         "createdAt": f"2026-05-{1 + i % 28:02d}T00:00:00Z", "kind": ["fact", "preference", "decision"][i % 3],
         "importance": 0.5}
        for i in range(n)
    ]


def test_every_candidate_is_accounted_for_exactly_once(client: RankingClient) -> None:
    cands = _candidates(25)
    resp = client.rank({"requestId": "acct", "query": "tea", "referenceTime": REF, "candidates": cands,
                        "budget": {"maxItems": 7}})
    selected = [m.id for m in resp.selected]
    dropped = [d.id for d in resp.dropped]
    assert sorted(selected + dropped) == sorted(c["id"] for c in cands)
    assert len(set(selected + dropped)) == len(cands)
    assert len(selected) <= 7
    assert all(d.reason != pb.DROP_REASON_UNSPECIFIED for d in resp.dropped)
    assert resp.request_id == "acct"


def test_selected_memories_carry_a_breakdown_and_ranks(client: RankingClient) -> None:
    resp = client.rank({"query": "tea", "referenceTime": REF, "candidates": _candidates(6)})
    assert resp.selected, "six eligible candidates with no limits select something"
    for m in resp.selected:
        assert m.breakdown.signals, m.id
        total = sum(s.contribution for s in m.breakdown.signals) + m.breakdown.blend_term
        assert math.isclose(total, m.breakdown.combined_score, abs_tol=1e-9)
    assert sorted(m.rank for m in resp.selected) == list(range(1, len(resp.selected) + 1))
    by_rank = sorted(resp.selected, key=lambda m: m.rank)
    finals = [m.breakdown.final_score for m in by_rank]
    assert finals == sorted(finals, reverse=True)


def test_reference_time_is_echoed_or_taken_from_the_clock(client: RankingClient) -> None:
    given = client.rank({"referenceTime": REF, "candidates": _candidates(1)})
    assert given.reference_time.ToJsonString() == REF
    before = time.time()
    clocked = client.rank({"candidates": _candidates(1)})
    assert before - 1 <= clocked.reference_time.ToSeconds() <= time.time() + 1


def test_empty_candidate_list_is_a_valid_empty_answer(client: RankingClient) -> None:
    resp = client.rank({"query": "anything", "referenceTime": REF})
    assert list(resp.selected) == [] and list(resp.dropped) == []


def test_identical_requests_give_byte_identical_responses(client: RankingClient) -> None:
    req = {"query": "tea travel", "referenceTime": REF, "candidates": _candidates(40), "placement": "PLACEMENT_EDGES",
           "budget": {"maxItems": 9, "maxTokens": 60}}
    first = client.rank(req).SerializeToString()
    assert all(client.rank(req).SerializeToString() == first for _ in range(3))


@pytest.mark.parametrize(
    ("candidate_patch", "field"),
    [
        ({"retrievalScore": "NaN"}, "candidates[1].retrieval_score"),
        ({"retrievalScore": "Infinity"}, "candidates[1].retrieval_score"),
        ({"retrievalScore": 1.5}, "candidates[1].retrieval_score"),
        ({"id": "m0"}, "candidates[1].id"),
        ({"id": ""}, "candidates[1].id"),
        ({"importance": -0.1}, "candidates[1].importance"),
        ({"facetScores": {"bm25": "NaN"}}, 'candidates[1].facet_scores["bm25"]'),
        ({"thread": "t" * 129}, "candidates[1].thread"),
        ({"speaker": "é" * 65}, "candidates[1].speaker"),
        ({"position": -1}, "candidates[1].position"),
        ({"position": str(2**53 + 1)}, "candidates[1].position"),
    ],
)
def test_bad_candidates_are_refused_naming_the_field(
    client: RankingClient, candidate_patch: dict[str, object], field: str
) -> None:
    cands = _candidates(3)
    cands[1] = {**cands[1], **candidate_patch}
    with pytest.raises(RankingError) as info:
        client.rank({"referenceTime": REF, "candidates": cands})
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert field in info.value.fields
    assert info.value.reason == "INVALID_REQUEST"


def test_bad_request_detail_is_a_google_rpc_bad_request(live_server: Running) -> None:
    """Decoded with the plain grpc stub, not memrank's client: the wire format is what clients rely on."""
    with grpc.insecure_channel(f"127.0.0.1:{live_server.port}") as channel:
        stub = pb_grpc.RankingServiceStub(channel)
        req = pb.RankRequest(candidates=[pb.Candidate(id="x", retrieval_score=float("nan"))])
        with pytest.raises(grpc.RpcError) as info:
            stub.Rank(req, timeout=5)
    status = rpc_status.from_call(info.value)
    assert status is not None and info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    kinds = {d.type_url.rsplit("/", 1)[-1] for d in status.details}
    assert kinds == {"google.rpc.BadRequest", "google.rpc.ErrorInfo"}
    bad = error_details_pb2.BadRequest()
    next(d for d in status.details if d.Is(bad.DESCRIPTOR)).Unpack(bad)
    assert [v.field for v in bad.field_violations] == ["candidates[0].retrieval_score"]
    info_detail = error_details_pb2.ErrorInfo()
    next(d for d in status.details if d.Is(info_detail.DESCRIPTOR)).Unpack(info_detail)
    assert info_detail.domain == "memrank.v1"


@pytest.mark.parametrize(
    ("candidate_patch", "field", "limit"),
    [
        ({"thread": "t" * 129}, "thread", "at most 128 bytes (limits.max_thread_bytes)"),
        ({"speaker": "s" * 129}, "speaker", "at most 128 bytes (limits.max_speaker_bytes)"),
        ({"position": -1}, "position", "must be in [0, 9007199254740992] (2^53), got -1"),
        ({"position": 2**53 + 1}, "position", "must be in [0, 9007199254740992] (2^53), got 9007199254740993"),
    ],
)
def test_thread_position_and_speaker_violations_name_the_limit(
    client: RankingClient, candidate_patch: dict[str, object], field: str, limit: str
) -> None:
    cands = _candidates(2)
    cands[0] = {**cands[0], **candidate_patch}
    with pytest.raises(RankingError) as info:
        client.rank({"referenceTime": REF, "candidates": cands})
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert [(v.field, v.description) for v in info.value.violations] == [(f"candidates[0].{field}", limit)]
    assert info.value.reason == "INVALID_REQUEST"


def test_thread_position_and_speaker_at_their_limits_are_ranked(client: RankingClient) -> None:
    cands = _candidates(4)
    cands[0] |= {"thread": "t" * 128, "position": "9007199254740992", "speaker": "é" * 64}
    cands[1] |= {"thread": "session-1", "position": 0, "speaker": "Caroline"}
    cands[2] |= {"position": 1}  # no thread: the empty-named one
    resp = client.rank({"referenceTime": REF, "candidates": cands})
    assert sorted([m.id for m in resp.selected] + [d.id for d in resp.dropped]) == ["m0", "m1", "m2", "m3"]


def test_mismatched_embedding_dimensions_are_refused(client: RankingClient) -> None:
    cands = _candidates(2)
    cands[0]["embedding"] = [0.1, 0.2, 0.3]
    cands[1]["embedding"] = [0.1, 0.2]
    with pytest.raises(RankingError) as info:
        client.rank({"candidates": cands})
    assert info.value.fields == ("candidates[1].embedding",)
    assert "candidates[0].embedding has 3" in info.value.violations[0].description


def test_unknown_profile_names_the_known_ones(client: RankingClient) -> None:
    with pytest.raises(RankingError) as info:
        client.rank({"profile": "no-such-profile", "candidates": _candidates(1)})
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.fields == ("profile",)
    assert "default" in info.value.violations[0].description
    assert info.value.reason == "UNKNOWN_PROFILE"


def test_over_limit_candidate_count_names_the_limit(client: RankingClient) -> None:
    with pytest.raises(RankingError) as info:
        client.rank({"candidates": [{"id": f"c{i}"} for i in range(1601)]})
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.fields == ("candidates",)
    assert "limits.max_candidates" in info.value.violations[0].description
    assert info.value.reason == "LIMIT_EXCEEDED"


def test_the_largest_allowed_batch_with_embeddings_fits_the_message_limit(client: RankingClient) -> None:
    """1,600 candidates x 768 float32 (4.9 MB) is over grpc's 4 MiB default; the server's default must take it."""
    request = pb.RankRequest(query="q")
    for i in range(1600):
        request.candidates.add(id=f"c{i}", retrieval_score=0.5, embedding=[0.01 * (i % 7)] * 768)
    assert request.ByteSize() > 4 * 1024 * 1024
    resp = client.rank(request, timeout=60)
    assert len(resp.selected) + len(resp.dropped) == 1600


def test_list_profiles_includes_default_sorted(client: RankingClient) -> None:
    resp = client.list_profiles()
    names = [p.name for p in resp.profiles]
    assert "default" in names and names == sorted(names)
    assert all(p.weights for p in resp.profiles)
    assert resp.policy_version.startswith("policy-")


def test_list_profiles_shows_defaults_batch_floor_and_no_threshold(client: RankingClient) -> None:
    profiles = {p.name: p for p in client.list_profiles().profiles}
    for name in ("default", "with-reranker"):  # with-reranker keeps default's floor
        assert profiles[name].relevance_floor == 0.1 and profiles[name].relevance_threshold == 0.0
    assert all(p.relevance_floor == 0.0 for name, p in profiles.items() if name not in ("default", "with-reranker"))


def test_a_min_max_scaled_batch_loses_no_candidate_to_defaults_floor(client: RankingClient) -> None:
    # Scores scaled per batch (weakest 0, best 1): the floor judges the batch, whose best reaches 0.1.
    scaled = pb.RankRequest(query="capital of Peru", explicit_lookup=True, candidates=[
        pb.Candidate(id=f"c{k}", content=f"travel note {k}", retrieval_score=r) for k, r in enumerate((1.0, 0.3, 0.0))])
    resp = client.rank(scaled)
    assert [m.id for m in resp.selected] == ["c0", "c1", "c2"] and not resp.dropped
    # Nothing reaches it: nothing relevant, every candidate dropped below the threshold.
    for c in scaled.candidates:
        c.retrieval_score *= 0.05
    resp = client.rank(scaled)
    assert not resp.selected
    assert {d.id: d.reason for d in resp.dropped} == dict.fromkeys(("c0", "c1", "c2"), pb.DROP_REASON_BELOW_THRESHOLD)
