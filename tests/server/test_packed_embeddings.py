"""Packed embeddings (RankRequest.embeddings_f32 + embedding_dim) through a live server on loopback."""

from __future__ import annotations

from pathlib import Path

import grpc
import numpy as np
import pytest

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.call import Call, Policy, RankInput, handle_rank
from memrank.client import RankingClient, RankingError, pack_embeddings
from memrank.config import load_settings
from tests.support.servers import start_serve, stop

DIM = 16


def _matrix(n: int, seed: int = 3) -> np.ndarray:
    """Clustered unit rows (a few topics plus noise), so the diversity pass finds near-copies by cosine."""
    gen = np.random.default_rng(seed)
    topics = gen.standard_normal((4, DIM))
    rows = topics[np.arange(n) % 4] + 0.05 * gen.standard_normal((n, DIM))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _request(n: int, embeddings: np.ndarray | None, **fields: object) -> pb.RankRequest:
    """A request with per-candidate embeddings (when given) and a fixed reference time."""
    req = pb.RankRequest(**{"query": "tea travel plans", "profile": "default", **fields})  # type: ignore[arg-type]
    req.reference_time.FromJsonString("2026-06-01T12:00:00Z")
    for i in range(n):
        c = req.candidates.add(id=f"m{i}", content=f"memory {i} about tea and travel number {i % 5}",
                               retrieval_score=round((i * 37 % 100) / 100, 2), kind=("fact", "decision")[i % 2],
                               importance=0.5, layer=("session", "durable")[i % 2])
        c.created_at.FromSeconds(1_780_000_000 - 3600 * i)
        if embeddings is not None:
            c.embedding.extend(embeddings[i].tolist())
    return req


def _packed(req: pb.RankRequest, matrix: np.ndarray) -> pb.RankRequest:
    """The same request with its embeddings packed by hand (not by the client's helper)."""
    out = pb.RankRequest()
    out.CopyFrom(req)
    for c in out.candidates:
        c.ClearField("embedding")
    out.embeddings_f32 = matrix.astype("<f4").tobytes()
    out.embedding_dim = matrix.shape[1]
    return out


def _bytes(resp: pb.RankResponse) -> bytes:
    return resp.SerializeToString(deterministic=True)


@pytest.mark.parametrize("explain", [pb.EXPLAIN_LEVEL_FULL, pb.EXPLAIN_LEVEL_SELECTED, pb.EXPLAIN_LEVEL_UNSPECIFIED])
@pytest.mark.parametrize("profile", ["default", "research", "agent-observer"])
def test_packed_and_per_candidate_embeddings_give_byte_identical_responses(
    client: RankingClient, explain: int, profile: str
) -> None:
    matrix = _matrix(48)
    fields = {"explain": explain, "profile": profile, "budget": pb.Budget(max_items=12, max_tokens=400)}
    per_candidate = _request(48, matrix, **fields)
    packed = _packed(_request(48, None, **fields), matrix)
    assert not any(len(c.embedding) for c in packed.candidates)
    want = _bytes(client.rank(per_candidate))
    assert _bytes(client.rank(packed)) == want
    # The client's helper and its embeddings argument build the same request.
    assert _bytes(client.rank(pack_embeddings(per_candidate))) == want
    assert _bytes(client.rank(_request(48, None, **fields), embeddings=matrix)) == want


def test_the_embeddings_are_used(client: RankingClient) -> None:
    """Cosine near-copies are dropped as redundant; without embeddings the answer differs (token shingles)."""
    matrix = _matrix(48)
    with_packed = client.rank(_packed(_request(48, None, explain=pb.EXPLAIN_LEVEL_FULL), matrix))
    without = client.rank(_request(48, None, explain=pb.EXPLAIN_LEVEL_FULL))
    assert any(d.reason == pb.DROP_REASON_REDUNDANT for d in with_packed.dropped)
    assert _bytes(with_packed) != _bytes(without)


def test_a_zero_row_means_what_zeros_sent_per_candidate_mean(client: RankingClient) -> None:
    matrix = _matrix(12)
    matrix[5] = 0.0
    want = _bytes(client.rank(_request(12, matrix, explain=pb.EXPLAIN_LEVEL_FULL)))
    assert _bytes(client.rank(_packed(_request(12, None, explain=pb.EXPLAIN_LEVEL_FULL), matrix))) == want


def test_a_client_made_to_pack_sends_the_same_answer(live_server: object, client: RankingClient) -> None:
    port = live_server.port  # type: ignore[attr-defined]
    matrix = _matrix(20)
    req = _request(20, matrix, explain=pb.EXPLAIN_LEVEL_FULL)
    with RankingClient(f"127.0.0.1:{port}", timeout=10, pack_embeddings=True) as packing:
        assert _bytes(packing.rank(req)) == _bytes(client.rank(req))
        # A request whose candidates do not all carry an embedding goes as it is (per-candidate rules apply).
        partial = _request(20, matrix)
        partial.candidates[3].ClearField("embedding")
        assert _bytes(packing.rank(partial)) == _bytes(client.rank(partial))
    assert len(req.candidates[0].embedding) == DIM, "the caller's message is not modified"


def test_pack_embeddings_checks_shapes() -> None:
    req = _request(3, None)
    with pytest.raises(ValueError, match="one dimension"):
        pack_embeddings(req)
    with pytest.raises(ValueError, match=r"\(3, dim\)"):
        pack_embeddings(req, np.zeros((2, 4), dtype=np.float32))
    packed = pack_embeddings(req, [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    assert packed.embedding_dim == 2
    assert packed.embeddings_f32 == np.array([1, 2, 3, 4, 5, 6], dtype="<f4").tobytes()


def _refusal(client: RankingClient, req: pb.RankRequest) -> RankingError:
    with pytest.raises(RankingError) as info:
        client.rank(req)
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.reason == "INVALID_REQUEST"
    return info.value


def test_embedding_dim_without_bytes_is_refused(client: RankingClient) -> None:
    err = _refusal(client, _request(3, None, embedding_dim=4))
    assert err.fields == ("embeddings_f32",)
    assert "required when embedding_dim is set" in err.violations[0].description


def test_bytes_without_embedding_dim_are_refused(client: RankingClient) -> None:
    err = _refusal(client, _request(3, None, embeddings_f32=bytes(48)))
    assert err.fields == ("embedding_dim",)
    assert "required when embeddings_f32 is set" in err.violations[0].description


@pytest.mark.parametrize("size", [4, 44, 49, 52])
def test_a_wrong_byte_length_names_expected_and_got(client: RankingClient, size: int) -> None:
    err = _refusal(client, _request(3, None, embeddings_f32=bytes(size), embedding_dim=4))
    assert err.fields == ("embeddings_f32",)
    assert f"expected 48 bytes (3 candidates x embedding_dim 4 x 4 bytes of float32), got {size}" == \
        err.violations[0].description


def test_a_dimension_over_the_limit_names_the_limit(client: RankingClient) -> None:
    err = _refusal(client, _request(2, None, embeddings_f32=bytes(2 * 4097 * 4), embedding_dim=4097))
    assert err.fields == ("embedding_dim",)
    assert err.violations[0].description == "at most 4096 dimensions (limits.max_embedding_dim), got 4097"


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_values_are_refused_naming_the_row(client: RankingClient, bad: float) -> None:
    matrix = _matrix(3)
    matrix[1, 7] = bad
    err = _refusal(client, _packed(_request(3, None), matrix))
    assert err.fields == ("embeddings_f32",)
    assert "must be finite" in err.violations[0].description
    assert "row 1 (candidates[1]) column 7" in err.violations[0].description


def test_candidates_that_also_carry_an_embedding_are_refused_naming_the_first(client: RankingClient) -> None:
    req = _packed(_request(5, None), _matrix(5))
    req.candidates[2].embedding.extend([0.5] * DIM)
    req.candidates[4].embedding.extend([0.5] * DIM)
    err = _refusal(client, req)
    assert err.fields == ("candidates[2].embedding",)
    assert "must be empty when embeddings_f32 is set" in err.violations[0].description


def test_other_violations_are_still_reported_beside_packed_ones(client: RankingClient) -> None:
    req = _request(3, None, embedding_dim=4)
    req.candidates[1].retrieval_score = 2.0
    err = _refusal(client, req)
    assert err.fields == ("embeddings_f32", "candidates[1].retrieval_score")


def test_a_served_answer_is_the_same_whatever_the_blas_thread_count(tmp_path: Path) -> None:
    """`memrank serve` runs BLAS on one thread; this process on the default count: same bytes for 400 x 384.

    The diversity pass's cosine rows are BLAS matvecs; each dot product must not depend on how BLAS splits
    the work, or one request could get two answers from two differently configured workers.
    """
    gen = np.random.default_rng(11)
    topics = gen.standard_normal((20, 384))
    rows = topics[np.arange(400) % 20] + 0.3 * gen.standard_normal((400, 384))
    matrix = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    req = _packed(_request(400, None, budget=pb.Budget(max_items=20, max_tokens=4000)), matrix)
    here = _bytes(handle_rank(RankInput(req), Policy.of(load_settings(env={})), Call(0.0)))
    proc = start_serve(tmp_path, "--address", "127.0.0.1:0", "--metrics-port", "0", "--workers", "1")
    try:
        with RankingClient(f"127.0.0.1:{proc.port}", timeout=20) as c:
            served = [_bytes(c.rank(req)) for _ in range(3)]
    finally:
        stop(proc)
    assert served == [here] * 3
