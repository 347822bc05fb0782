"""The server's shadow (the ``shadow`` settings, docs/how-to/shadow.md): which Rank calls a candidate profile is
scored on as well. Its comparison reaches the metrics and the decision record only, never the response.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping

import numpy as np

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.sample import sampled
from memrank.api.validate import retrieval_range
from memrank.config import ShadowSettings
from memrank.core.batch import Batch
from memrank.core.profile import Profile


def server_shadow(request: pb.RankRequest, batch: Batch, shadow: ShadowSettings, profiles: Mapping[str, Profile],
                  draw: Callable[[], float] = random.random) -> str | None:
    """The profile the server shadows this call with, else None (off, the caller's own, not sampled, unreadable)."""
    name = shadow.profile
    if name is None or request.shadow_profile:
        return None
    rate = shadow.sample_rate
    if not (sampled(request.request_id, rate) if request.request_id else rate >= 1.0 or draw() < rate):
        return None
    lo, hi = retrieval_range([request.profile or "default", name], profiles)
    if not bool(np.all((batch.retrieval >= lo) & (batch.retrieval <= hi))):
        return None
    return name
