"""Replays every conformance vector in tests/vectors/*.json through the Python client.

Against the in-process server fixture, or against the live server at
MEMRANK_ADDR when clients/test.sh sets it (so all three clients answer to the
same process). Vectors under tests/vectors/pending/ document open server bugs
and are not replayed.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.client import RankingClient, RankingError, pack_embeddings

VECTORS = Path(__file__).resolve().parents[1] / "vectors"
FILES = sorted(VECTORS.glob("*.json"))


@pytest.fixture()
def vector_client(request: pytest.FixtureRequest) -> Iterator[RankingClient]:
    """The live server at MEMRANK_ADDR when set, else the in-process one."""
    addr = os.environ.get("MEMRANK_ADDR")
    if not addr:
        yield request.getfixturevalue("client")
        return
    with RankingClient(addr, timeout=10) as c:
        yield c


@pytest.fixture(scope="module")
def digests() -> Iterator[dict[str, dict[str, str]]]:
    """SHA-256 of each request and response as encoded here; clients/test.sh compares them across clients."""
    out: dict[str, dict[str, str]] = {}
    yield out
    folder = os.environ.get("MEMRANK_DIGESTS_DIR")
    if folder:
        Path(folder, "python.json").write_text(json.dumps(out, indent=2, sort_keys=True))


def sha256(msg: Message) -> str:
    return hashlib.sha256(msg.SerializeToString(deterministic=True)).hexdigest()


def test_vectors_exist() -> None:
    assert len(FILES) >= 20


def test_packing_helper_gives_the_packed_vectors_bytes() -> None:
    """A vector's "embeddings" rows, packed by memrank.client.pack_embeddings, are its request's embeddings_f32."""
    packed = [v for v in (json.loads(p.read_text(encoding="utf-8")) for p in FILES) if "embeddings" in v]
    assert packed, "no vector carries packed embeddings"
    for vec in packed:
        want = json_format.ParseDict(vec["request"], pb.RankRequest())
        bare = pb.RankRequest()
        bare.CopyFrom(want)
        bare.ClearField("embeddings_f32")
        bare.ClearField("embedding_dim")
        got = pack_embeddings(bare, vec["embeddings"])
        assert got.SerializeToString(deterministic=True) == want.SerializeToString(deterministic=True), vec["name"]


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_vector(vector_client: RankingClient, digests: dict[str, dict[str, str]], path: Path) -> None:
    vec: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    request = json_format.ParseDict(vec["request"], pb.RankRequest())
    sums = digests[vec["name"]] = {"request": sha256(request)}
    if "expect_error" in vec:
        want = vec["expect_error"]
        with pytest.raises(RankingError) as info:
            vector_client.rank(request)
        assert info.value.code == getattr(grpc.StatusCode, want["code"])
        assert want["field"] in info.value.fields
        return
    resp = vector_client.rank(request)
    sums["response"] = sha256(resp)
    want = vec["expect"]
    assert [m.id for m in resp.selected] == want["selected_ids"]
    assert {m.id: m.rank for m in resp.selected} == want["ranks"]
    assert [m.position for m in resp.selected] == list(range(len(resp.selected)))
    for m in resp.selected:
        assert m.breakdown.final_score == pytest.approx(want["final_scores"][m.id], abs=1e-9, rel=0), m.id
    assert {d.id: pb.DropReason.Name(d.reason) for d in resp.dropped} == want["dropped"]
    ids = [c["id"] for c in vec["request"]["candidates"]]
    assert sorted([m.id for m in resp.selected] + [d.id for d in resp.dropped]) == sorted(ids)
