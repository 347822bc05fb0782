"""A weight, a relevance threshold and a minimum score have one range each, and the profile checker and the
wire's validation of a request refuse the same values (issue #34: the weight was [0, 10] in one, [0, 1] in
the other, and a profile's relevance_threshold was unbounded)."""

from __future__ import annotations

import pytest

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.validate import validate_rank_request
from memrank.config import load_settings
from memrank.core.errors import ConfigError, InvalidRequest
from memrank.profiles.model import profile_from_mapping

LIMITS = load_settings(env={}).limits
SIGNALS = [{"name": "relevance", "weight": 0.5}]


def _wire_refuses(**fields: object) -> list[str]:
    req = pb.RankRequest(query="q", candidates=[pb.Candidate(id="a", retrieval_score=0.5)])
    for name, value in fields.items():
        if name == "weight":
            req.weight_overrides["relevance"] = value  # type: ignore[assignment]
        else:
            setattr(req, name, value)
    try:
        validate_rank_request(req, LIMITS)
    except InvalidRequest as exc:
        return [f"{v.field}: {v.description}" for v in exc.violations]
    return []


def _profile_refuses(key: str, value: float) -> str:
    raw: dict[str, object] = {"signals": [{"name": "relevance", "weight": value}]} if key == "weight" else {
        "signals": SIGNALS, key: value}
    try:
        profile_from_mapping("profiles.p", raw)
    except ConfigError as exc:
        return str(exc)
    return ""


@pytest.mark.parametrize(("key", "inside", "outside", "shown"), [
    ("weight", (0.0, 2.0, 10.0), (-0.5, 10.5), "[0, 10]"),
    ("relevance_threshold", (0.0, 0.4, 1.0), (-0.1, 1.5), "[0, 1]"),
    ("min_score", (0.0, 1.0), (-0.1, 1.01), "[0, 1]"),
])
def test_the_profile_and_the_wire_take_the_same_range(key: str, inside: tuple[float, ...],
                                                       outside: tuple[float, ...], shown: str) -> None:
    for value in inside:
        assert _wire_refuses(**{key: value}) == [], value
        assert _profile_refuses(key, value) == "", value
    for value in outside:
        wire = _wire_refuses(**{key: value})
        assert len(wire) == 1 and f"must be in {shown}, got {value}" in wire[0], wire
        profile = _profile_refuses(key, value)
        assert profile.startswith("profiles.p.") and str(value) in profile, profile
