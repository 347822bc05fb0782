"""The server's shadow (the ``shadow`` settings): which Rank calls a candidate profile is scored on as well.

A call that names its own ``RankRequest.shadow_profile`` keeps it, and its response carries the comparison.
Otherwise, with ``shadow.profile`` set, a share ``shadow.sample_rate`` of the calls is ranked a second time under
that profile: the calls whose request_id is in the share by the decision log's hash (``api.sample``: every
worker and replica shadows the same ids), and calls without a request_id by a random draw. The comparison reaches
the metrics and the decision record only: the response is byte for byte the one without the shadow.

A call is not shadowed when the shadow profile could not read it: served under the Go scorer's formula (which
takes any finite retrieval_score) with a retrieval_score outside [0, 1], which the shadow would refuse.
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
