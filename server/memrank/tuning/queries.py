"""A labelled Rank request as a ``Query``: validated, converted and scored by the same code the server runs.

The request goes through ``memrank.api.validate.validate_rank_request`` (the
server's own rules, so a bad request fails here as it would over gRPC), then
``memrank.api.convert.request_to_domain`` and ``memrank.core.scoring.combine.score``
under the base profile. Kept per candidate: every signal's normalised column
in profile order, whether a gate dropped it, its grade, and its token count as
the pipeline budgets it. The request's own ``profile``, ``weight_overrides``,
budget and layers do not matter: the columns are the base profile's.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.convert import request_to_domain
from memrank.api.validate import validate_rank_request
from memrank.config import Limits
from memrank.core.batch import Batch, RankParams
from memrank.core.pipeline import estimate_tokens
from memrank.core.profile import Profile
from memrank.core.scoring.combine import score
from memrank.core.signals.base import ScoringContext
from memrank.tuning.dataset import Query, TuningError

TUNABLE_FORMULAS = ("weighted_sum", "agent_observer")  # combined = sum of weight x normalised, nothing else


def base_profile(profiles: Mapping[str, Profile], name: str) -> Profile:
    """The named base profile; TuningError listing the known ones, or saying why it cannot be tuned."""
    if name not in profiles:
        raise TuningError(f"unknown base profile {name!r}; known profiles: {', '.join(sorted(profiles))}")
    p = profiles[name]
    if p.formula not in TUNABLE_FORMULAS:
        raise TuningError(f"base profile {name!r} combines with formula {p.formula!r} (a fixed retrieval term "
                          f"outside its signals), which a weighted sum cannot express; pick another base")
    if not any(s.weight > 0 for s in p.signals):
        raise TuningError(f"base profile {name!r} has no signal with a positive weight to start from")
    return p


def query_of(batch: Batch, params: RankParams, profile: Profile, relevant: Mapping[str, float], key: str,
             group: str) -> Query:
    """Score the batch under the profile and label its candidates (ids not among them count as missed)."""
    ctx = ScoringContext(params.query, params.reference_time, params.explicit_lookup)
    scores = score(batch, ctx, profile)
    ids = set(batch.ids)
    tokens, _ = estimate_tokens(batch)
    return Query(
        key=key, group=group,
        features=np.stack([c.normalized for c in scores.signals]).astype(np.float64, copy=False),
        eligible=np.asarray(scores.gate == 0),
        grades=np.array([float(relevant.get(i, 0.0)) for i in batch.ids], dtype=np.float64),
        tokens=np.asarray(tokens, dtype=np.int64),
        outside=np.array([float(g) for i, g in relevant.items() if i not in ids], dtype=np.float64),
    )


def query_of_request(request: pb.RankRequest, relevant: Mapping[str, float], profile: Profile, limits: Limits,
                     now: float, key: str, group: str) -> Query:
    """Validate (InvalidRequest naming the field), convert and score one labelled request."""
    columns = validate_rank_request(request, limits)
    batch, params = request_to_domain(request, now, columns)
    return query_of(batch, params, profile, relevant, key, group)
