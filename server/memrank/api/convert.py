"""Requests: memrank.v1 messages as the core's domain objects, and Timestamps as epoch seconds and back.

Responses are ``encode``'s.
"""

from __future__ import annotations

import math

from google.protobuf.timestamp_pb2 import Timestamp

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.columnar_candidates import columns_of
from memrank.api.request_columns import CandidateColumns
from memrank.core.batch import Batch, LayerSpec, RankParams
from memrank.core.types import ExplainLevel, Placement


def ts_to_seconds(ts: Timestamp) -> float:
    """A Timestamp as float epoch seconds."""
    return ts.seconds + ts.nanos / 1e9


def seconds_to_ts(seconds: float) -> Timestamp:
    """Float epoch seconds as a Timestamp (nanosecond resolution, floor)."""
    whole = math.floor(seconds)
    nanos = min(round((seconds - whole) * 1e9), 999_999_999)
    return Timestamp(seconds=whole, nanos=nanos)


def request_to_domain(req: pb.RankRequest, now: float,
                      columns: CandidateColumns | None = None) -> tuple[Batch, RankParams]:
    """A validated RankRequest as a Batch and RankParams; ``now`` fills an unset reference time. ``columns``: the
    ones validation read (``validate_rank_request`` returns them), so no candidate field is read twice."""
    batch = (columns if columns is not None else columns_of(req)).to_batch()
    params = RankParams(
        query=req.query,
        reference_time=ts_to_seconds(req.reference_time) if req.HasField("reference_time") else now,
        profile=req.profile or "default",
        layers=tuple(
            LayerSpec(layer.name, layer.share, layer.floor_tokens, layer.max_items,
                      layer.min_score if layer.HasField("min_score") else None)
            for layer in req.layers
        ),
        max_tokens=req.budget.max_tokens, max_items=req.budget.max_items,
        placement=Placement(req.placement),
        explicit_lookup=req.explicit_lookup,
        weight_overrides=dict(req.weight_overrides),
        min_score=req.min_score if req.HasField("min_score") else None,
        explain=ExplainLevel(req.explain),
        shadow_profile=req.shadow_profile,
        relevance_threshold=req.relevance_threshold if req.HasField("relevance_threshold") else None,
    )
    return batch, params
