"""Which calls the server shadows: off, the caller's own, sampled by request_id or (without one) by a draw, and
not when the shadow could not read the call's retrieval scores."""

from __future__ import annotations

import hashlib

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.convert import request_to_domain
from memrank.api.shadow import server_shadow
from memrank.config import ShadowSettings, load_settings
from memrank.core.batch import Batch

PROFILES = load_settings(env={}).profiles


def _call(request_id: str = "", score: float = 0.5, **fields: str) -> tuple[pb.RankRequest, Batch]:
    req = pb.RankRequest(request_id=request_id, query="q", candidates=[pb.Candidate(id="a", retrieval_score=score)],
                         **fields)
    return req, request_to_domain(req, 0.0)[0]


def test_off_and_the_callers_own_shadow() -> None:
    req, batch = _call("r")
    assert server_shadow(req, batch, ShadowSettings(None, 1.0), PROFILES) is None
    assert server_shadow(req, batch, ShadowSettings("research", 1.0), PROFILES) == "research"
    own, batch = _call("r", shadow_profile="support")
    assert server_shadow(own, batch, ShadowSettings("research", 1.0), PROFILES) is None


def test_request_ids_by_their_hash_and_calls_without_one_by_the_draw() -> None:
    ids = [f"id-{i}" for i in range(200)]
    expected = [i for i in ids if int(hashlib.sha256(i.encode()).digest()[:8].hex(), 16) < 0.4 * 2 ** 64]
    setting = ShadowSettings("research", 0.4)
    got = [i for i in ids if server_shadow(_call(i)[0], _call(i)[1], setting, PROFILES)]
    assert got == expected and 40 < len(got) < 120
    req, batch = _call("")
    assert server_shadow(req, batch, setting, PROFILES, draw=lambda: 0.39) == "research"
    assert server_shadow(req, batch, setting, PROFILES, draw=lambda: 0.4) is None
    assert server_shadow(req, batch, ShadowSettings("research", 0.0), PROFILES, draw=lambda: 0.0) is None


def test_a_go_formula_call_with_a_score_outside_0_1_is_not_shadowed_by_another_formula() -> None:
    setting = ShadowSettings("default", 1.0)
    outside, batch = _call("r", score=1.5, profile="agent-observer")
    assert server_shadow(outside, batch, setting, PROFILES) is None
    inside, batch = _call("r", score=1.0, profile="agent-observer")
    assert server_shadow(inside, batch, setting, PROFILES) == "default"
    # shadowed by the same formula, any finite score reads the same
    outside, batch = _call("r", score=1.5, profile="agent-observer")
    assert server_shadow(outside, batch, ShadowSettings("agent-observer", 1.0), PROFILES) == "agent-observer"
