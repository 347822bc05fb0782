"""Receipts (memrank.receipt.v3; v2 still verified): the server's bytes (core.explain.receipt, from the outcome)
and the verifier's (memrank.client.verify, from the request and response alone) agree; tampering is caught;
`memrank verify`."""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import struct
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from google.protobuf import json_format

from memrank import cli
from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.call import Call, Policy, RankInput, handle_rank
from memrank.client import verify_receipt
from memrank.client.verify import canonical_lines, q
from memrank.config import load_settings
from memrank.core.explain import receipt

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
FIXTURES = Path(__file__).resolve().parents[2] / "vectors" / "receipts"
SETTINGS = load_settings(env={})
KEY = b"receipt-key"
REF = "2026-06-01T12:00:00Z"


def rank(request: dict[str, Any] | pb.RankRequest, key: bytes | None = None) -> tuple[pb.RankRequest,
                                                                                       pb.RankResponse]:
    req = request if isinstance(request, pb.RankRequest) else json_format.ParseDict(request, pb.RankRequest())
    return req, handle_rank(RankInput(req), Policy.of(SETTINGS), Call(time.time(), receipt_key=key))


def cand(cid: str, content: str, retrieval: float, **extra: Any) -> dict[str, Any]:
    return {"id": cid, "content": content, "retrievalScore": retrieval, "importance": 0.5, **extra}


NEAR = [cand("p-1", "The user prefers oat milk in their coffee.", 0.91),
        cand("p-2", "The user prefers oat milk in their coffee!", 0.90),
        cand("a-1", "The user is allergic to peanuts; never suggest peanut dishes.", 0.62),
        cand("low", "Something else entirely", 0.02)]
EMB = [[0.1, -0.5, 0.25], [1.0, 0.0, -1.0], [1 / 3, 2.5, -0.125], [0.0, 0.0, 0.0]]
RICH = [
    cand("é-1", "Le grand livre est sur Postgres", 0.8, kind="décision", thread="fil-😀", position=3,
         speaker="José", source="SOURCE_CHAT", safety="SAFETY_STATUS_REVIEW_NEEDED", provenance="ab" * 32,
         tokenCount=12, accessCount=4, layer="durable", createdAt="2026-05-01T08:30:00.123456789Z",
         lastAccessedAt="2026-05-31T00:00:00Z", eventTime="2026-04-30T00:00:00.5Z",
         ingestedAt="2026-05-01T08:30:01Z", validFrom="2026-01-01T00:00:00Z", validTo="2027-01-01T00:00:00Z",
         facetScores={"bm25": 0.25, "Zeta": 0.5, "été": 0.75}, stageScores={"rerank": 0.9},
         metadata={"team": "payments", "_trace": "x", "Équipe": "y"}),
    cand("s-2", "The ledger runs on Postgres 16", 0.9, layer="session", position=4, thread="fil-😀"),
    cand("k-3", 'Quotes " and \\ backslashes\nnew line\x7f', 0.6, layer="knowledge", kind="fact"),
    {"id": "bare"},
]
REQUESTS: dict[str, dict[str, Any]] = {
    "default-full": {"query": "oat milk coffee", "referenceTime": REF, "candidates": NEAR,
                     "explain": "EXPLAIN_LEVEL_FULL"},
    "rich": {"query": "ledger Postgres", "referenceTime": "2026-06-01T12:00:00.000000250Z", "profile": "research",
             "candidates": RICH, "explicitLookup": True, "placement": "PLACEMENT_EDGES", "minScore": 0.01,
             "relevanceThreshold": 0.05, "weightOverrides": {"trust": 0.3},
             "layers": [{"name": "session", "share": 1.0, "maxItems": 2},
                        {"name": "durable", "share": 0.5, "floorTokens": 16, "minScore": 0.02}],
             "budget": {"maxTokens": 400, "maxItems": 3}},
    "embeddings": {"query": "oat milk", "referenceTime": REF,
                   "candidates": [{**c, "embedding": e} for c, e in zip(NEAR[:3], EMB, strict=False)] + [NEAR[3]],
                   "explain": "EXPLAIN_LEVEL_FULL"},
    "no-reference-time": {"query": "ledger", "profile": "agent-observer", "candidates": RICH[1:]},
    "empty": {"referenceTime": REF, "candidates": []},
    # A content column of 1.9 MB (the server hashes it in pieces of 1 MiB of text; the verifier whole).
    "large-contents": {"query": "ledger", "referenceTime": REF,
                       "candidates": [cand("big-1", "ledger é " * 100_000, 0.5), cand("big-2", "x" * 900_000, 0.4),
                                      cand("big-3", "Postgres ledger. " * 2_000, 0.3)]},
}


@pytest.mark.parametrize("name", list(REQUESTS))
def test_server_and_verifier_bytes_agree(name: str) -> None:
    req, resp = rank(REQUESTS[name], KEY)
    assert resp.receipt.schema == receipt.SCHEMA == "memrank.receipt.v3"
    check = verify_receipt(req, resp, KEY)
    assert check, check.message()
    assert check.digest == resp.receipt.digest and not check.unchecked
    # protobuf JSON, as the files `memrank verify` reads
    assert verify_receipt(json_format.MessageToDict(req), json_format.MessageToDict(resp), KEY)


def test_packed_and_per_candidate_embeddings_give_one_line() -> None:
    per, resp = rank(REQUESTS["embeddings"])
    packed = pb.RankRequest()
    packed.CopyFrom(per)
    rows = [list(c.embedding) or [0.0] * 3 for c in per.candidates]
    for c in packed.candidates:
        c.ClearField("embedding")
    packed.embeddings_f32, packed.embedding_dim = struct.pack(f"<{4 * 3}f", *(x for row in rows for x in row)), 3
    packed_resp = rank(packed)[1]
    line = [x for x in canonical_lines(per, resp) if x.startswith("embeddings ")]
    assert line == [x for x in canonical_lines(packed, packed_resp) if x.startswith("embeddings ")]
    matrix = np.array(rows, dtype="<f4").tobytes()
    assert line == [f"embeddings 3 {hashlib.sha256(matrix).hexdigest()}"]
    assert packed_resp.receipt.digest == resp.receipt.digest  # the same answer to the same inputs


def test_the_example_receipt_lines() -> None:
    """examples/receipt-request.json and the canonical lines the receipts page shows for it (both included there)."""
    req, resp = rank(json.loads((EXAMPLES / "receipt-request.json").read_text(encoding="utf-8")))
    lines = (EXAMPLES / "receipt-lines.txt").read_text(encoding="utf-8").splitlines()
    got = canonical_lines(req, resp)
    policy = [i for i, x in enumerate(lines) if x.startswith("policy_version ")]
    assert policy == [4]  # the configuration's hash: the one line not fixed by the request
    lines[4] = f"policy_version {q(resp.policy_version)}"
    assert got == lines
    assert hashlib.sha256("".join(x + "\n" for x in lines).encode()).hexdigest() == resp.receipt.digest


def test_q_is_ascii_json() -> None:
    s = 'a"b\\c\n\t\x08\x0c\r\x01\x1f\x7f é😀\u2028/'
    want = '"a\\"b\\\\c\\n\\t\\b\\f\\r\\u0001\\u001f\\u007f \\u00e9\\ud83d\\ude00\\u2028/"'
    assert q(s) == receipt.q(s) == want


def test_unset_values_and_times() -> None:
    req, resp = rank({"referenceTime": "2026-06-01T12:00:00.25Z", "candidates": [
        {"id": "x", "createdAt": "1970-01-01T00:00:00Z", "position": "0"}]})
    lines = canonical_lines(req, resp)
    assert "reference_time 1780315200 250000000" in lines
    zero = struct.pack(">d", 0.0)
    set_zero, unset = hashlib.sha256(b"\x01" + zero).hexdigest(), hashlib.sha256(b"\x00" + zero).hexdigest()
    for line in ("candidate id " + hashlib.sha256(b"\0\0\0\1x").hexdigest(),
                 "candidate layer " + hashlib.sha256(b"\0\0\0\0").hexdigest(),
                 "candidate importance " + unset, "candidate position " + set_zero,
                 "candidate created_at " + set_zero, "candidate valid_to " + unset,
                 "candidate facet_scores " + hashlib.sha256(b"").hexdigest(),
                 "candidate metadata " + hashlib.sha256(b"\0\0\0\0").hexdigest()):
        assert line in lines
    assert verify_receipt(req, resp)
    v2 = canonical_lines(req, resp, "memrank.receipt.v2")
    assert v2[v2.index("candidates 1") + 1] == (
        f'candidate "x" "" "" {hashlib.sha256(b"").hexdigest()} {"0" * 16} - 0 0 0 0 "" "" 0 "" {"0" * 16} - - - - -')


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.json")), ids=lambda p: p.stem)
def test_receipt_fixtures_v2_and_v3(path: Path) -> None:
    """tests/vectors/receipts (derive.py, no server): each verifies with its lines; one score an ulp lower not."""
    fixture = json.loads(path.read_text(encoding="utf-8"))
    req = json_format.ParseDict(fixture["request"], pb.RankRequest())
    resp = json_format.ParseDict(fixture["response"], pb.RankResponse())
    assert resp.receipt.schema == f"memrank.receipt.{path.stem.rsplit('_', 1)[1]}"
    assert canonical_lines(req, resp) == fixture["lines"]
    check = verify_receipt(req, resp)
    assert check, check.message()
    resp.selected[0].score = math.nextafter(resp.selected[0].score, 0.0)
    assert "digest" in verify_receipt(req, resp).problems[0]


def copy(resp: pb.RankResponse) -> pb.RankResponse:
    out = pb.RankResponse()
    out.CopyFrom(resp)
    return out


def test_tampered_responses_fail() -> None:
    req, resp = rank(REQUESTS["default-full"], KEY)
    assert resp.selected and resp.dropped
    bad = copy(resp)
    bad.selected[0].score = math.nextafter(bad.selected[0].score, 0.0)
    assert "digest" in verify_receipt(req, bad, KEY).problems[0]
    bad = copy(resp)
    bad.selected[0].id, bad.dropped[0].id = bad.dropped[0].id, bad.selected[0].id
    assert not verify_receipt(req, bad, KEY)
    bad = copy(resp)
    gone = bad.dropped[0].id
    del bad.dropped[0]
    check = verify_receipt(req, bad, KEY)
    assert not check and check.problems[0] == f"candidate {gone!r} is neither selected nor dropped"
    bad = copy(resp)
    redundant = next(d for d in bad.dropped if d.reason == pb.DROP_REASON_REDUNDANT)
    redundant.breakdown.covered_by = "a-1"
    assert not verify_receipt(req, bad, KEY)
    bad = copy(resp)
    bad.reference_time.nanos = 1
    assert not verify_receipt(req, bad, KEY)
    bad = copy(resp)
    bad.selected[0].breakdown.signals[0].raw += 0.5
    assert not verify_receipt(req, bad, KEY)


def test_changed_requests_fail_but_not_what_is_not_bound() -> None:
    req, resp = rank(REQUESTS["rich"], KEY)
    assert verify_receipt(req, resp, KEY)

    def changed(edit: Any) -> pb.RankRequest:
        out = pb.RankRequest()
        out.CopyFrom(req)
        edit(out)
        return out

    for edit in (lambda r: setattr(r, "query", r.query + "?"),
                 lambda r: setattr(r.candidates[0], "content", r.candidates[0].content + "."),
                 lambda r: setattr(r.candidates[1], "retrieval_score", 0.89),
                 lambda r: r.candidates[0].facet_scores.__setitem__("bm25", 0.26),
                 lambda r: r.candidates[0].metadata.__setitem__("new", "key"),
                 lambda r: setattr(r.candidates[0].valid_to, "nanos", 1000),
                 lambda r: setattr(r.layers[0], "max_items", 3),
                 lambda r: setattr(r.budget, "max_tokens", 401),
                 lambda r: r.ClearField("min_score"),
                 lambda r: setattr(r, "placement", pb.PLACEMENT_BEST_LAST)):
        assert not verify_receipt(changed(edit), resp, KEY)
    # Not bound (they never change the answer): metadata values, request_id, explain; and a time is bound as the
    # float64 the server ranks with (seconds + nanos / 1e9: in 2026 one ulp is 2^-22 s, 238 ns).
    for edit in (lambda r: r.candidates[0].metadata.__setitem__("team", "other"),
                 lambda r: setattr(r.candidates[0].valid_to, "nanos", 1),
                 lambda r: setattr(r, "request_id", "another"), lambda r: setattr(r, "explain", 1)):
        assert verify_receipt(changed(edit), resp, KEY)


def test_the_response_must_carry_what_the_receipt_binds() -> None:
    request = REQUESTS["default-full"]
    full_req, full = rank(request)
    for level in ("EXPLAIN_LEVEL_SELECTED", "EXPLAIN_LEVEL_NONE"):
        req, resp = rank({**request, "explain": level})
        assert resp.receipt.digest == full.receipt.digest
        check = verify_receipt(req, resp)
        assert not check and not check.problems and "EXPLAIN_LEVEL_FULL" in check.unchecked[-1]
    assert verify_receipt(full_req, full)
    # Without a REDUNDANT drop, the default level verifies.
    req, resp = rank({**request, "explain": "EXPLAIN_LEVEL_SELECTED", "candidates": NEAR[1:]})
    assert verify_receipt(req, resp)


def test_signature() -> None:
    req, resp = rank(REQUESTS["default-full"], KEY)
    assert resp.receipt.signature == hmac.new(KEY, resp.receipt.digest.encode(), hashlib.sha256).hexdigest()
    assert verify_receipt(req, resp, KEY)
    wrong = verify_receipt(req, resp, b"other")
    assert not wrong and wrong.problems[0].startswith("signature")
    unkeyed = verify_receipt(req, resp)
    assert unkeyed and unkeyed.unchecked == ("the signature (no key given)",)
    alone = verify_receipt(None, resp, KEY)
    assert not alone and not alone.problems and alone.unchecked[0].startswith("the digest")
    unsigned = rank(REQUESTS["default-full"])[1]
    assert not verify_receipt(req, unsigned, KEY)
    v1 = copy(resp)
    v1.receipt.schema = "memrank.receipt.v1"
    assert not verify_receipt(req, v1)
    v2 = copy(resp)  # a v2 receipt of the same answer names another form: its digest differs
    v2.receipt.schema = "memrank.receipt.v2"
    assert "digest" in verify_receipt(req, v2).problems[0]


def test_memrank_verify_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    req, resp = rank(REQUESTS["default-full"], KEY)
    files = {name: tmp_path / f"{name}.json" for name in ("request", "response", "tampered")}
    files["request"].write_text(json_format.MessageToJson(req))
    files["response"].write_text(json_format.MessageToJson(resp))
    bad = copy(resp)
    bad.selected[0].score += 1e-9
    files["tampered"].write_text(json_format.MessageToJson(bad))
    key = tmp_path / "receipt.key"
    key.write_bytes(KEY + b"\n")
    r, s, t = str(files["request"]), str(files["response"]), str(files["tampered"])
    assert cli.main(["verify", s, "--request", r, "--key-file", str(key)]) == 0
    assert capsys.readouterr().out.startswith("receipt verified")
    assert cli.main(["verify", t, "--request", r]) == 1
    assert "differs: digest" in capsys.readouterr().err
    assert cli.main(["verify", s, "--key-file", str(key)]) == 2
    assert "not checked: the digest" in capsys.readouterr().err
    other = tmp_path / "other.key"
    other.write_bytes(b"nope")
    assert cli.main(["verify", s, "--request", r, "--key-file", str(other)]) == 1
    assert "differs: signature" in capsys.readouterr().err
    assert cli.main(["verify", s, "--request", r, "--lines"]) == 0
    assert capsys.readouterr().out.startswith("schema memrank.receipt.v3\nquery ")
    assert cli.main(["verify", r]) == 2  # a request is no response (unknown fields)
    assert "not a RankResponse" in capsys.readouterr().err
    assert cli.main(["verify", s, "--request", s]) == 2  # nor a response a request
    assert f"{s}: not a RankRequest" in capsys.readouterr().err


def test_a_large_batch_with_some_extras_verifies() -> None:
    """1,100 candidates, facets and metadata on some, two layers: the server's columns are the verifier's."""
    many = [cand(f"m-{i}", f"memory number {i} about postgres", (i % 97) / 97, layer=("a", "b")[i % 2],
                 **({"facetScores": {"bm25": i / 1100}, "metadata": {"k": str(i)}} if i % 7 == 0 else {}))
            for i in range(1100)]
    req, resp = rank({"query": "postgres", "referenceTime": REF, "candidates": many}, KEY)
    check = verify_receipt(req, resp, KEY)
    assert check, check.message()
