"""Paired converters between memrank.v1 protobuf messages and the core's domain objects."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import compress
from typing import Any

import numpy as np
from google.protobuf.timestamp_pb2 import Timestamp

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.core import receipt
from memrank.core.batch import Batch, CandidateInput, LayerSpec, RankParams
from memrank.core.outcome import SCORING_SCHEMA, RankOutcome
from memrank.core.profile import Profile
from memrank.core.scores import Scores
from memrank.core.types import ExplainLevel, Placement
from memrank.grpc.columns import TIME_FIELDS, CandidateColumns


def ts_to_seconds(ts: Timestamp) -> float:
    """A Timestamp as float epoch seconds."""
    return ts.seconds + ts.nanos / 1e9


def seconds_to_ts(seconds: float) -> Timestamp:
    """Float epoch seconds as a Timestamp (nanosecond resolution, floor)."""
    whole = math.floor(seconds)
    nanos = min(round((seconds - whole) * 1e9), 999_999_999)
    return Timestamp(seconds=whole, nanos=nanos)


def _opt_time(c: pb.Candidate, name: str) -> float | None:
    return ts_to_seconds(getattr(c, name)) if c.HasField(name) else None


def candidate_to_domain(c: pb.Candidate) -> CandidateInput:
    """One proto Candidate as a row."""
    times = {name: _opt_time(c, name) for name in TIME_FIELDS}
    return CandidateInput(
        id=c.id, layer=c.layer, kind=c.kind, content=c.content, retrieval_score=c.retrieval_score,
        facet_scores=dict(c.facet_scores), importance=c.importance if c.HasField("importance") else None,
        access_count=c.access_count, token_count=c.token_count, source=c.source, provenance=c.provenance,
        safety=c.safety, embedding=tuple(c.embedding), stage_scores=dict(c.stage_scores),
        metadata=dict(c.metadata), thread=c.thread, position=c.position if c.HasField("position") else None,
        speaker=c.speaker, **times,
    )


def candidate_to_proto(row: CandidateInput) -> pb.Candidate:
    """A row as a proto Candidate (the inverse of candidate_to_domain)."""
    c = pb.Candidate(
        id=row.id, layer=row.layer, kind=row.kind, content=row.content, retrieval_score=row.retrieval_score,
        facet_scores=dict(row.facet_scores), access_count=row.access_count, token_count=row.token_count,
        source=row.source, provenance=row.provenance, safety=row.safety, embedding=list(row.embedding),
        stage_scores=dict(row.stage_scores), metadata=dict(row.metadata), thread=row.thread, speaker=row.speaker,
    )
    if row.importance is not None:
        c.importance = row.importance
    if row.position is not None:
        c.position = row.position
    for name in TIME_FIELDS:
        value = getattr(row, name)
        if value is not None:
            getattr(c, name).CopyFrom(seconds_to_ts(value))
    return c


def candidates_to_batch(cands: Sequence[pb.Candidate]) -> Batch:
    """Validated candidates as a Batch, one column at a time (equal to batch_from_rows of candidate_to_domain)."""
    return CandidateColumns(cands).to_batch()


def request_to_domain(req: pb.RankRequest, now: float,
                      columns: CandidateColumns | None = None) -> tuple[Batch, RankParams]:
    """A validated RankRequest as a Batch and RankParams; ``now`` fills an unset reference time.

    ``columns`` are the ones validation already read (``validate_rank_request`` returns them),
    so no candidate field is read twice; without them the request's columns are read here.
    """
    batch = (columns if columns is not None else CandidateColumns.of(req)).to_batch()
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
        placement=Placement(req.placement), explicit_lookup=req.explicit_lookup,
        weight_overrides=dict(req.weight_overrides),
        min_score=req.min_score if req.HasField("min_score") else None,
        explain=ExplainLevel(req.explain), shadow_profile=req.shadow_profile,
        relevance_threshold=req.relevance_threshold if req.HasField("relevance_threshold") else None,
    )
    return batch, params


def weights_to_proto(profile: Profile) -> list[pb.SignalWeight]:
    """The profile's signal weights, in profile order."""
    return [pb.SignalWeight(signal=s.name, weight=s.weight, normalization=s.normalization) for s in profile.signals]


def breakdown_to_proto(o: RankOutcome, batch: Batch, i: int, rank: int | None = None) -> pb.ScoreBreakdown:
    """The full breakdown of candidate i (``rank`` 0-based for selected memories)."""
    s: Scores = o.scores
    signals = [
        pb.SignalScore(name=c.name, raw=float(c.raw[i]), normalized=float(c.normalized[i]), weight=c.weight,
                       contribution=float(c.contribution[i]), reasons=c.reasons[i])
        for c in s.signals
    ]
    reasons = list(o.drop_notes[i])
    if o.token_estimated[i]:
        reasons.append("token_count estimated as ceil(characters / 4)")
    out = pb.ScoreBreakdown(
        signals=signals, retrieval_score=float(batch.retrieval[i]), quality_score=float(s.quality[i]),
        combined_score=float(s.combined[i]), final_score=float(o.final[i]), blend_term=float(s.blend_term[i]),
        reasons=reasons, token_count=int(o.token_count[i]), token_count_estimated=bool(o.token_estimated[i]),
    )
    if o.covered_by[i] >= 0:
        out.covered_by = batch.ids[int(o.covered_by[i])]
    if not math.isnan(o.gain[i]):
        out.marginal_gain = float(o.gain[i])
    if rank is not None:
        out.bucket.CopyFrom(pb.CalibrationBucket(index=rank, lower=float(o.bucket_lower[rank]),
                                                 upper=float(o.bucket_upper[rank]), prior_score=float(o.final[i])))
    return out


class _Explainer:
    """The outcome's per-candidate numbers as plain Python values, written into breakdowns in place.

    Reading numpy scalars one at a time and copying finished sub-messages
    (``CopyFrom``) dominated response building; this fills each breakdown
    where it lives, with the same values as ``breakdown_to_proto``. ``rows``
    are the candidates whose breakdowns will be written (None = all): only
    their numbers are taken out of the columns, and a signal's (lazily
    formatted) ``reasons`` are indexed only for them.
    """

    def __init__(self, o: RankOutcome, batch: Batch, rows: list[int] | None = None) -> None:
        at = None if rows is None else np.array(rows, dtype=np.intp)

        def take(a: np.ndarray) -> Sequence[Any] | Mapping[int, Any]:
            return a.tolist() if rows is None else dict(zip(rows, a[at].tolist(), strict=True))

        s = o.scores
        self.signals = [(c.name, take(c.raw), take(c.normalized), c.weight, take(c.contribution), c.reasons)
                        for c in s.signals]
        self.retrieval = take(batch.retrieval)
        self.quality, self.combined = take(s.quality), take(s.combined)
        self.final, self.blend = take(o.final), take(s.blend_term)
        self.notes, self.estimated = o.drop_notes, take(o.token_estimated)
        self.tokens, self.covered_by, self.gain = take(o.token_count), take(o.covered_by), take(o.gain)
        self.lower, self.upper = o.bucket_lower.tolist(), o.bucket_upper.tolist()
        self.ids = batch.ids

    def fill(self, out: pb.ScoreBreakdown, i: int, rank: int | None = None) -> None:
        """Write candidate i's breakdown into ``out`` (``rank`` 0-based for selected memories)."""
        add = out.signals.add
        for name, raw, normalized, weight, contribution, reasons in self.signals:
            add(name=name, raw=raw[i], normalized=normalized[i], weight=weight, contribution=contribution[i],
                reasons=reasons[i])
        out.retrieval_score = self.retrieval[i]
        out.quality_score = self.quality[i]
        out.combined_score = self.combined[i]
        out.final_score = self.final[i]
        out.blend_term = self.blend[i]
        out.reasons.extend(self.notes[i])
        if self.estimated[i]:
            out.reasons.append("token_count estimated as ceil(characters / 4)")
        out.token_count = self.tokens[i]
        out.token_count_estimated = self.estimated[i]
        if self.covered_by[i] >= 0:
            out.covered_by = self.ids[self.covered_by[i]]
        if not math.isnan(self.gain[i]):
            out.marginal_gain = self.gain[i]
        if rank is not None:
            b = out.bucket
            b.index, b.lower, b.upper, b.prior_score = rank, self.lower[rank], self.upper[rank], self.final[i]


def outcome_to_proto(o: RankOutcome, batch: Batch, params: RankParams, request_id: str,
                     policy_version: str, receipt_key: bytes | None = None) -> pb.RankResponse:
    """The RankResponse for an outcome: selected in placement order, dropped in input order."""
    # Unset means SELECTED: full breakdowns for hundreds of dropped candidates dominated the response.
    explain = params.explain if params.explain != ExplainLevel.UNSPECIFIED else ExplainLevel.SELECTED
    ranked, positions, public = o.ranked.tolist(), o.positions.tolist(), o.public_score.tolist()
    full = explain == ExplainLevel.FULL
    ex = _Explainer(o, batch, None if full else ranked)
    drop, final = o.drop.tolist(), o.final.tolist()
    # Below FULL a dropped candidate is four scalars: the whole repeated field is built in one go
    # (the constructor adds every entry in C), from the columns picked by the drop mask.
    dropped = [] if full else [
        {"id": cid, "layer": layer, "reason": reason, "score": score}
        for cid, layer, reason, score in zip(compress(batch.ids, drop), compress(o.layer_of, drop),
                                             compress(drop, drop), compress(final, drop), strict=True)
    ]
    resp = pb.RankResponse(
        request_id=request_id, weights=weights_to_proto(o.profile),
        scoring_schema=SCORING_SCHEMA, policy_version=policy_version, profile=o.profile.name,
        allocations=[pb.LayerAllocation(**vars(a)) for a in o.allocations],
        importance_suggestions=[pb.ImportanceSuggestion(id=batch.ids[i], suggested_importance=v)
                                for i, v in o.suggestions],
        dropped=dropped,
    )
    # Positions are a permutation of 0..k-1: adding in position order is the placement order.
    for r in sorted(range(len(ranked)), key=positions.__getitem__):
        i = ranked[r]
        m = resp.selected.add(id=batch.ids[i], layer=o.layer_of[i], rank=r + 1, position=positions[r],
                              score=public[r])
        if explain != ExplainLevel.NONE:
            ex.fill(m.breakdown, i, r)
        add_stage = m.stages.add
        for st in o.stages[r]:
            add_stage(stage=st.stage, objective=st.objective, provenance=st.provenance, input_score=st.input_score,
                      position=st.position, output_score=st.output_score)
    if full:
        add_dropped = resp.dropped.add
        for i in range(o.n):
            if drop[i]:
                ex.fill(add_dropped(id=batch.ids[i], layer=o.layer_of[i], reason=drop[i], score=final[i]).breakdown,
                        i)
    resp.reference_time.CopyFrom(seconds_to_ts(params.reference_time))
    if o.shadow is not None:
        sh = o.shadow
        resp.shadow.CopyFrom(pb.ShadowComparison(profile=sh.profile, k=sh.k, overlap_at_k=sh.overlap_at_k,
                                                 kendall_tau=sh.kendall_tau, selected_ids=sh.selected_ids))
    digest, signature = receipt.seal(receipt_payload(o, batch, params, resp), receipt_key)
    resp.receipt.CopyFrom(pb.Receipt(schema=receipt.SCHEMA, digest=digest, signature=signature))
    return resp


def receipt_payload(o: RankOutcome, batch: Batch, params: RankParams, resp: pb.RankResponse) -> bytes:
    """The canonical receipt bytes of an answer: the request's inputs and every outcome, whatever the explain
    level (``core.receipt``)."""
    return receipt.canonical(batch, o, params, resp.reference_time.seconds, resp.reference_time.nanos,
                             resp.policy_version)


def profile_to_proto(p: Profile) -> pb.Profile:
    """A profile for ListProfiles."""
    return pb.Profile(
        name=p.name, description=p.description, weights=weights_to_proto(p), fusion=p.fusion,
        compatibility=p.compatibility, relevance_threshold=p.relevance_threshold or 0.0, min_score=p.min_score,
        diversity_lambda=p.diversity_lambda,
    )


def profiles_to_proto(profiles: Mapping[str, Profile], policy_version: str) -> pb.ListProfilesResponse:
    """Every profile, sorted by name."""
    return pb.ListProfilesResponse(profiles=[profile_to_proto(profiles[k]) for k in sorted(profiles)],
                                   policy_version=policy_version)
