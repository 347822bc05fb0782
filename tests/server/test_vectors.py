"""Replays every conformance vector in tests/vectors/*.json through the Python client.

Against the in-process server fixture, or against the live server at
MEMRANK_ADDR when clients/test.sh sets it (so all three clients answer to the
same process). Vectors under tests/vectors/pending/ document open server bugs
and are not replayed.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.client import RankingClient, RankingError, pack_embeddings, verify_receipt

VECTORS = Path(__file__).resolve().parents[1] / "vectors"
FILES = sorted(VECTORS.glob("*.json"))
PLAIN = re.compile(r'[ !#-\[\]-~]*')  # printable ASCII but " and \: its JSON string literal is "..." as is


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
    check_extras(want, resp)
    check_receipt(request, resp)


def tampered(resp: pb.RankResponse) -> Iterator[tuple[str, pb.RankResponse]]:
    """Copies of the response with one score changed (by one ulp), one id swapped (a selected one for a dropped
    one, else renamed) and one dropped candidate removed."""
    def copy() -> pb.RankResponse:
        out = pb.RankResponse()
        out.CopyFrom(resp)
        return out

    bad = copy()
    target = bad.selected[0] if bad.selected else bad.dropped[0]
    target.score = math.nextafter(target.score, math.inf)
    yield "score", bad
    bad = copy()
    if bad.selected and bad.dropped:
        bad.selected[0].id, bad.dropped[0].id = bad.dropped[0].id, bad.selected[0].id
    else:
        (bad.selected or bad.dropped)[0].id += "-x"
    yield "id", bad
    if resp.dropped:
        bad = copy()
        del bad.dropped[0]
        yield "dropped", bad


def check_receipt(request: pb.RankRequest, resp: pb.RankResponse) -> None:
    """memrank.client.verify_receipt rebuilds the receipt from the request and response: it verifies, and every
    tampered copy fails naming what differs."""
    check = verify_receipt(request, resp)
    assert check, check.message()
    for what, bad in tampered(resp):
        got = verify_receipt(request, bad)
        assert not got and got.problems, (what, got.message())


def close(got: float, want: float) -> bool:
    return abs(got - want) <= 1e-9


def check_extras(want: dict[str, Any], resp: pb.RankResponse) -> None:
    """The optional expectations (tests/vectors/README.md): covered_by, stages, importance_suggestions,
    shadow and receipt."""
    if "covered_by" in want:
        got = {d.id: d.breakdown.covered_by for d in resp.dropped if d.id in want["covered_by"]}
        assert got == want["covered_by"]
    if "stages" in want:
        for m in resp.selected:
            records = want["stages"][m.id]
            assert len(m.stages) == len(records), (m.id, list(m.stages))
            for rec, st in zip(records, m.stages, strict=True):
                assert rec.get("stage", st.stage) == st.stage, (m.id, rec, st)
                assert rec.get("provenance", st.provenance) == st.provenance, (m.id, rec, st)
                assert rec.get("objective_contains", "") in st.objective, (m.id, rec, st)
                assert st.position == rec["position"], (m.id, rec, st)
                assert close(st.input_score, rec["input_score"]), (m.id, rec, st)
                assert "output_score" not in rec or close(st.output_score, rec["output_score"]), (m.id, rec, st)
    if "importance_suggestions" in want:
        got = {s.id: s.suggested_importance for s in resp.importance_suggestions}
        assert len(got) == len(resp.importance_suggestions) and set(got) == set(want["importance_suggestions"])
        for cid, value in want["importance_suggestions"].items():
            assert close(got[cid], value), cid
    if "shadow" in want:
        exp, sh = want["shadow"], resp.shadow
        assert resp.HasField("shadow") and sh.profile == exp["profile"] and sh.k == exp["k"]
        assert list(sh.selected_ids) == exp["selected_ids"]
        assert close(sh.overlap_at_k, exp["overlap_at_k"]) and close(sh.kendall_tau, exp["kendall_tau"])
    if "receipt" in want:
        assert resp.receipt.schema == want["receipt"]["schema"]
        assert resp.receipt.digest == receipt_digest(want["receipt"]["lines"], resp.policy_version)


def receipt_digest(lines: list[str], policy_version: str) -> str:
    """SHA-256 hex of the vector's canonical receipt lines, ${policy_version} filled with q(policy_version)."""
    assert PLAIN.fullmatch(policy_version), f"policy_version {policy_version!r} needs JSON escapes"
    text = "".join(line.replace("${policy_version}", f'"{policy_version}"') + "\n" for line in lines)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
