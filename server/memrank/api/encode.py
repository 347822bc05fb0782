"""Responses: the core's outcomes as memrank.v1 messages (every breakdown written by ``Breakdowns``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import compress
from typing import Any

import numpy as np

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.convert import seconds_to_ts
from memrank.core.admission import AdmissionResult
from memrank.core.batch import Batch, RankParams
from memrank.core.explain import receipt
from memrank.core.explain.outcome import SCORING_SCHEMA, RankOutcome
from memrank.core.profile import Profile
from memrank.core.reasons import Reasons
from memrank.core.scoring.columns import Scores
from memrank.core.text.normalize import CHARS_PER_TOKEN
from memrank.core.types import ExplainLevel


def weights_to_proto(profile: Profile) -> list[pb.SignalWeight]:
    """The profile's signal weights, in profile order."""
    return [pb.SignalWeight(signal=s.name, weight=s.weight, normalization=s.normalization) for s in profile.signals]


class Breakdowns:
    """Per-candidate numbers as plain Python values, written into breakdowns in place: the one breakdown writer.

    Reading numpy scalars one at a time and copying finished sub-messages
    (``CopyFrom``) dominated response building; this fills each breakdown
    where it lives. ``rows`` are the candidates whose breakdowns will be
    written (None = all): only their numbers are taken out of the columns,
    and a signal's (lazily formatted) ``reasons`` are indexed only for them.
    ``of_outcome`` is a ranking's (final score after every stage, drop
    notes, tokens, covering pick, gain, calibration bucket); ``of_scores`` is
    scoring alone (ScoreAdmission: the final score is the combined one, the
    notes are the gates' reasons, and nothing of selection is written).
    """

    def __init__(self, scores: Scores, batch: Batch, rows: list[int] | None, final: np.ndarray,
                 notes: Sequence[Sequence[str]], estimated: np.ndarray, tokens: np.ndarray, covered_by: np.ndarray,
                 gain: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> None:
        at = None if rows is None else np.array(rows, dtype=np.intp)

        def take(a: np.ndarray) -> Sequence[Any] | Mapping[int, Any]:
            return a.tolist() if rows is None else dict(zip(rows, a[at].tolist(), strict=True))

        # A lazily formatted column is read through its ``row`` (no indexing checks: i is always a candidate).
        self.signals = [(c.name, take(c.raw), take(c.normalized), c.weight, take(c.contribution),
                         c.reasons.row if isinstance(c.reasons, Reasons) else c.reasons.__getitem__)
                        for c in scores.signals]
        self.retrieval = take(batch.retrieval)
        self.quality, self.combined = take(scores.quality), take(scores.combined)
        self.final, self.blend = take(final), take(scores.blend_term)
        self.notes, self.estimated = notes, take(estimated)
        self.tokens, self.covered_by, self.gain = take(tokens), take(covered_by), take(gain)
        self.lower, self.upper = lower.tolist(), upper.tolist()
        self.ids = batch.ids

    @classmethod
    def of_outcome(cls, o: RankOutcome, batch: Batch, rows: list[int] | None = None) -> Breakdowns:
        """A ranking's breakdowns."""
        return cls(o.scores, batch, rows, o.final, o.drop_notes, o.token_estimated, o.token_count, o.covered_by,
                   o.gain, o.bucket_lower, o.bucket_upper)

    @classmethod
    def of_scores(cls, scores: Scores, batch: Batch) -> Breakdowns:
        """Scoring's breakdowns alone (no stages, no selection)."""
        n, none = scores.n, np.zeros(0)
        return cls(scores, batch, None, scores.combined, scores.gate_reasons, np.zeros(n, dtype=bool),
                   np.zeros(n, dtype=np.int64), np.full(n, -1, dtype=np.int64), np.full(n, np.nan), none, none)

    def fill(self, out: pb.ScoreBreakdown, i: int, rank: int | None = None) -> None:
        """Write candidate i's breakdown into ``out`` (``rank`` 0-based for selected memories)."""
        add = out.signals.add
        for name, raw, normalized, weight, contribution, reasons in self.signals:
            add(name=name, raw=raw[i], normalized=normalized[i], weight=weight, contribution=contribution[i],
                reasons=reasons(i))
        out.retrieval_score = self.retrieval[i]
        out.quality_score = self.quality[i]
        out.combined_score = self.combined[i]
        out.final_score = self.final[i]
        out.blend_term = self.blend[i]
        out.reasons.extend(self.notes[i])
        if self.estimated[i]:
            out.reasons.append(f"token_count estimated as ceil(characters / {CHARS_PER_TOKEN})")
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
    ex = Breakdowns.of_outcome(o, batch, None if full else ranked)
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
        # Plain dicts: the constructor fills every entry in C (an Allocation's fields are LayerAllocation's).
        allocations=list(map(vars, o.allocations)),
        importance_suggestions=[{"id": batch.ids[i], "suggested_importance": v} for i, v in o.suggestions],
        dropped=dropped,
    )
    # Positions are a permutation of 0..k-1: adding in position order is the placement order.
    add_selected = resp.selected.add
    for r in sorted(range(len(ranked)), key=positions.__getitem__):
        i = ranked[r]
        # A StageRecord's fields are RankingStage's: the stages are added in C from their dicts.
        m = add_selected(id=batch.ids[i], layer=o.layer_of[i], rank=r + 1, position=positions[r], score=public[r],
                         stages=list(map(vars, o.stages[r])))
        if explain != ExplainLevel.NONE:
            ex.fill(m.breakdown, i, r)
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
    level (``core.explain.receipt``)."""
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


def admission_to_proto(request_id: str, result: AdmissionResult, batch: Batch, profile: Profile,
                       reference_time: float) -> pb.ScoreAdmissionResponse:
    """The ScoreAdmissionResponse for one scored candidate."""
    resp = pb.ScoreAdmissionResponse(
        request_id=request_id, decision=int(result.decision), score=result.score, reasons=list(result.reasons),
        admit_threshold=profile.admit_threshold, hold_threshold=profile.hold_threshold, profile=profile.name,
    )
    Breakdowns.of_scores(result.scores, batch).fill(resp.breakdown, 0)
    resp.reference_time.CopyFrom(seconds_to_ts(reference_time))
    return resp
