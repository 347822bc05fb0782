"""Selection through a live server: the README's worked examples, receipts, explain levels, shadow scoring."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import replace
from pathlib import Path

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.client import RankingClient, verify_receipt
from memrank.config import load_settings
from memrank.grpc.server import create_server

REF = "2026-06-01T00:00:00Z"
COPIES = [
    {"id": "pref-1", "content": "The user prefers oat milk in their coffee.", "retrievalScore": 0.91},
    {"id": "pref-2", "content": "The user prefers oat milk in their coffee!", "retrievalScore": 0.90},
    {"id": "pref-3", "content": "the user prefers oat milk in their coffee", "retrievalScore": 0.89},
    {"id": "pref-4", "content": "The user prefers Oat Milk in their coffee.", "retrievalScore": 0.88},
]
RESTRICTION = {"id": "allergy", "content": "The user is allergic to peanuts; never suggest peanut dishes.",
               "retrievalScore": 0.62}


def _near_copies() -> list[dict[str, object]]:
    common = {"kind": "preference", "importance": 0.7, "createdAt": "2026-05-01T00:00:00Z"}
    return [{**c, **common} for c in COPIES] + [{**RESTRICTION, "kind": "fact", "importance": 0.9,
                                                 "createdAt": "2026-03-01T00:00:00Z"}]


def test_near_copies_collapse_to_one_and_the_restriction_survives(client: RankingClient) -> None:
    request = {"query": "what should I cook for breakfast?", "referenceTime": REF, "candidates": _near_copies(),
               "budget": {"maxItems": 3}, "explain": "EXPLAIN_LEVEL_FULL"}  # FULL: dropped ones name covered_by
    plain = client.rank({**request, "profile": "agent-observer"})  # similarity top-k, no diversity
    assert [m.id for m in plain.selected] == ["pref-1", "pref-2", "pref-3"]
    resp = client.rank(request)
    assert sorted(m.id for m in resp.selected) == ["allergy", "pref-1"]
    redundant = {d.id: d for d in resp.dropped}
    assert set(redundant) == {"pref-2", "pref-3", "pref-4"}
    for d in redundant.values():
        assert d.reason == pb.DROP_REASON_REDUNDANT
        assert d.breakdown.covered_by == "pref-1"
    assert all(m.breakdown.marginal_gain != 0 for m in resp.selected)
    assert [s.stage for s in resp.selected[0].stages][-2:] == ["diversity", "calibration"]


def test_durable_floor_keeps_an_old_preference_in_a_long_session(client: RankingClient) -> None:
    session = [{"id": f"turn-{i}", "layer": "session", "content": f"session turn {i} about the deploy plan step {i}",
                "retrievalScore": 0.9 - i * 0.01, "importance": 0.6, "tokenCount": 40,
                "createdAt": "2026-05-31T23:00:00Z"} for i in range(30)]
    durable = {"id": "pref-vegetarian", "layer": "durable", "content": "The user is vegetarian.",
               "retrievalScore": 0.3, "importance": 0.7, "tokenCount": 12, "createdAt": "2026-01-15T00:00:00Z"}
    layers = [{"name": "session", "share": 1.0}, {"name": "durable", "share": 0.0, "floorTokens": 64}]
    request = {"query": "plan the deploy", "referenceTime": REF, "candidates": [*session, durable],
               "layers": layers, "budget": {"maxTokens": 400}}
    resp = client.rank(request)
    assert "pref-vegetarian" in {m.id for m in resp.selected}
    alloc = {a.layer: a for a in resp.allocations}
    assert alloc["durable"].floor_tokens == 64 and alloc["durable"].used_tokens == 12
    assert sum(m.breakdown.token_count for m in resp.selected) <= 400
    # Without the floor, the session's share takes the whole budget and the preference is crowded out.
    no_floor = client.rank({**request, "layers": [{"name": "session", "share": 1.0}, {"name": "durable"}]})
    assert "pref-vegetarian" not in {m.id for m in no_floor.selected}
    assert {d.id: d.reason for d in no_floor.dropped}["pref-vegetarian"] == pb.DROP_REASON_OVER_BUDGET


def test_a_layer_with_nothing_to_select_releases_its_share(client: RankingClient) -> None:
    cands = [{"id": f"k{i}", "layer": "knowledge", "content": f"fact {i} about topic {i}", "retrievalScore": 0.5,
              "importance": 0.5, "tokenCount": 50} for i in range(10)]
    layers = [{"name": "session", "share": 0.5}, {"name": "knowledge", "share": 0.5}]
    resp = client.rank({"query": "topic", "referenceTime": REF, "candidates": cands, "layers": layers,
                        "budget": {"maxTokens": 300}})
    alloc = {a.layer: a for a in resp.allocations}
    assert alloc["session"].candidate_count == 0 and alloc["session"].released_tokens == 150
    assert alloc["knowledge"].received_tokens == 150 and alloc["knowledge"].used_tokens == 300
    assert len(resp.selected) == 6


def test_receipt_digest_recomputes_from_the_response(client: RankingClient) -> None:
    """verify_receipt rebuilds the README's canonical form from the request and the response (the receipt
    tests proper: tests/unit/client/test_receipt_verify.py and every vector's replay)."""
    request = {"query": "breakfast", "referenceTime": REF, "candidates": _near_copies(),
               "placement": "PLACEMENT_EDGES", "explain": "EXPLAIN_LEVEL_FULL"}
    resp = client.rank(request)
    assert resp.receipt.schema == "memrank.receipt.v3"
    check = verify_receipt(request, resp)
    assert check and check.digest == resp.receipt.digest, check.message()
    assert resp.receipt.signature == ""
    other = client.rank({"query": "breakfast", "referenceTime": "2026-06-02T00:00:00Z", "candidates": _near_copies()})
    assert other.receipt.digest != resp.receipt.digest


def test_receipt_is_signed_with_the_configured_key(tmp_path: Path) -> None:
    key = tmp_path / "receipt.key"
    key.write_bytes(b"s3cret-receipt-key\n")
    s = load_settings(env={"MEMRANK_RECEIPT_KEY_FILE": str(key)})
    running = create_server(replace(s, server=replace(s.server, address="127.0.0.1:0", metrics_port=0)))
    try:
        with RankingClient(f"127.0.0.1:{running.port}") as c:
            resp = c.rank({"referenceTime": REF, "candidates": _near_copies()})
    finally:
        running.stop(0)
    expected = hmac.new(b"s3cret-receipt-key", resp.receipt.digest.encode(), hashlib.sha256).hexdigest()
    assert resp.receipt.signature == expected


def test_explain_levels_trim_breakdowns_but_not_the_answer(client: RankingClient) -> None:
    request = {"query": "breakfast", "referenceTime": REF, "candidates": _near_copies()}
    full = client.rank({**request, "explain": "EXPLAIN_LEVEL_FULL"})
    selected_only = client.rank({**request, "explain": "EXPLAIN_LEVEL_SELECTED"})
    none = client.rank({**request, "explain": "EXPLAIN_LEVEL_NONE"})
    # Unset is EXPLAIN_LEVEL_SELECTED.
    assert client.rank(request).SerializeToString(deterministic=True) == \
        selected_only.SerializeToString(deterministic=True)
    for resp in (selected_only, none):
        assert [(m.id, m.score) for m in resp.selected] == [(m.id, m.score) for m in full.selected]
        assert [(d.id, d.reason) for d in resp.dropped] == [(d.id, d.reason) for d in full.dropped]
        assert resp.receipt.digest == full.receipt.digest
        assert not any(d.HasField("breakdown") for d in resp.dropped)
    assert full.dropped and all(d.HasField("breakdown") for d in full.dropped)
    assert all(d.id and d.layer and d.reason for d in selected_only.dropped)
    assert all(m.HasField("breakdown") for m in selected_only.selected)
    assert not any(m.HasField("breakdown") for m in none.selected)
    assert none.ByteSize() < selected_only.ByteSize() < full.ByteSize()


def test_shadow_profile_reports_without_changing_the_answer(client: RankingClient) -> None:
    request = {"query": "breakfast", "referenceTime": REF, "candidates": _near_copies(), "budget": {"maxItems": 3}}
    base = client.rank(request)
    shadowed = client.rank({**request, "shadowProfile": "agent-observer"})
    assert [m.id for m in shadowed.selected] == [m.id for m in base.selected]
    sh = shadowed.shadow
    assert sh.profile == "agent-observer"
    assert list(sh.selected_ids) == ["pref-1", "pref-2", "pref-3"]
    real = [m.id for m in sorted(base.selected, key=lambda m: m.rank)]
    assert sh.k == len(real)
    assert sh.overlap_at_k == len(set(real) & {"pref-1", "pref-2", "pref-3"}) / len(real)
    assert not base.HasField("shadow")
