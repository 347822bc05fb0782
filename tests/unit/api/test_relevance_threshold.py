"""RankRequest.relevance_threshold: validated at the edge, carried to the core, replacing the profile's floor."""

from __future__ import annotations

import math

import pytest

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.convert import request_to_domain
from memrank.api.validate import validate_rank_request
from memrank.config import load_settings
from memrank.core.errors import InvalidRequest
from memrank.core.pipeline import rank
from memrank.core.types import DropReason
from memrank.profiles.builtin import BUILTIN_PROFILES

LIMITS = load_settings(env={}).limits


def _request(threshold: float | None = None, **kw: object) -> pb.RankRequest:
    weak = [pb.Candidate(id=f"c{k}", content=f"note number {k} about weather", retrieval_score=r, importance=0.5)
            for k, r in enumerate((0.02, 0.06, 0.3))]
    req = pb.RankRequest(query="capital of Peru", candidates=weak, explicit_lookup=True, **kw)
    if threshold is not None:
        req.relevance_threshold = threshold
    return req


@pytest.mark.parametrize("bad", [-0.01, 1.5, math.nan, math.inf])
def test_out_of_range_is_refused_naming_the_field(bad: float) -> None:
    with pytest.raises(InvalidRequest) as err:
        validate_rank_request(_request(bad), LIMITS)
    assert [v.field for v in err.value.violations] == ["relevance_threshold"]
    assert "must be in [0, 1]" in err.value.violations[0].description


def _dropped(req: pb.RankRequest) -> dict[str, DropReason]:
    validate_rank_request(req, LIMITS)
    batch, params = request_to_domain(req, 1_700_000_000.0)
    out = rank(batch, params, BUILTIN_PROFILES)
    return {batch.ids[i]: DropReason(int(out.drop[i])) for i in range(batch.n) if int(out.drop[i])}


def test_unset_uses_the_profiles_batch_floor_and_a_request_value_replaces_it() -> None:
    # default's floor (0.1) judges the batch: c2 (0.3) reaches it, so c0 (0.02) and c1 (0.06) stay.
    assert BUILTIN_PROFILES["default"].relevance_threshold is None
    assert BUILTIN_PROFILES["default"].relevance_floor == 0.1
    assert _dropped(_request()) == {}
    # Without c2 nothing reaches it: nothing relevant, everything dropped.
    weak = _request()
    del weak.candidates[2]
    assert _dropped(weak) == {"c0": DropReason.BELOW_THRESHOLD, "c1": DropReason.BELOW_THRESHOLD}
    # The request's threshold is the caller's floor on its own scale, per candidate, and replaces the batch
    # floor: 0.05 drops c0 only; 0 drops nothing, even in the weak batch; 0.5 drops all three.
    assert _dropped(_request(0.05)) == {"c0": DropReason.BELOW_THRESHOLD}
    assert _dropped(_request(0.0)) == {}
    weak.relevance_threshold = 0.0
    assert _dropped(weak) == {}
    assert _dropped(_request(0.5)) == dict.fromkeys(("c0", "c1", "c2"), DropReason.BELOW_THRESHOLD)
    # A compatibility profile has no floor of its own, but the request's applies to it too.
    assert _dropped(_request(profile="generative-agents")) == {}
    assert _dropped(_request(0.05, profile="generative-agents")) == {"c0": DropReason.BELOW_THRESHOLD}


def test_a_min_max_scaled_batch_keeps_its_weakest_candidate() -> None:
    # What memrank eval and the adapters' scores="minmax" send: the weakest candidate at 0, the best at 1.
    req = _request()
    for c, r in zip(req.candidates, (0.0, 0.4, 1.0), strict=True):
        c.retrieval_score = r
    assert _dropped(req) == {}
