"""Responses: the core's outcomes as memrank.v1 messages (every breakdown written by ``Breakdowns``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import compress
from operator import itemgetter
from typing import Any

import numpy as np

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.convert import seconds_to_ts
from memrank.core.admission import AdmissionResult
from memrank.core.batch import Batch, RankParams
from memrank.core.explain import receipt
from memrank.core.explain.outcome import SCORING_SCHEMA, RankOutcome
from memrank.core.profile import Profile
from memrank.core.reasons import Row, rows_of
from memrank.core.scoring.scores import Scores
from memrank.core.text.words import CHARS_PER_TOKEN
from memrank.core.types import ExplainLevel


def weights_to_proto(profile: Profile) -> list[dict[str, Any]]:
    """The profile's signal weights, in profile order, as SignalWeight field dicts (a constructor fills them in C;
    a message per weight was built and then copied into the response)."""
    return [{"signal": s.name, "weight": s.weight, "normalization": s.normalization} for s in profile.signals]


ESTIMATED = f"token_count estimated as ceil(characters / {CHARS_PER_TOKEN})"


class Breakdowns:
    """The one breakdown writer: each breakdown a dict (its signals a list of dicts) that the protobuf constructor
    turns into the message in C (setting fields and ``add()``-ing signal entries from Python dominated response
    building). Only the rows asked for are taken out of the columns, and each signal's reasons are formatted for
    them in one call (``rows_of``)."""

    def __init__(self, scores: Scores, batch: Batch, final: np.ndarray, notes: Sequence[Row],
                 estimated: np.ndarray, tokens: np.ndarray, covered_by: np.ndarray, gain: np.ndarray,
                 lower: np.ndarray, upper: np.ndarray) -> None:
        self.scores, self.ids = scores, batch.ids
        # Memory-level columns in the order ``dicts`` reads them.
        self.columns = (batch.retrieval, scores.quality, scores.combined, final, scores.blend_term, estimated,
                        tokens, covered_by, gain)
        self.notes, self.lower, self.upper = notes, lower, upper

    def dicts(self, rows: list[int], ranked: bool = False) -> list[dict[str, Any]]:
        """The breakdowns of candidates ``rows``, in that order, as ScoreBreakdown field dicts; ``ranked``: rows[r]
        is the memory of rank r + 1 (0-based bucket index r)."""
        at = np.array(rows, dtype=np.intp)
        per_signal = [
            [{"name": name, "raw": r, "normalized": v, "weight": weight, "contribution": x, "reasons": why}
             for r, v, x, why in zip(c.raw[at].tolist(), c.normalized[at].tolist(), c.contribution[at].tolist(),
                                     rows_of(c.reasons, rows), strict=True)]
            for name, weight, c in ((c.name, c.weight, c) for c in self.scores.signals)]
        signals = list(zip(*per_signal, strict=True)) if per_signal else [()] * len(rows)
        ids, lower, upper = self.ids, self.lower.tolist(), self.upper.tolist()
        out: list[dict[str, Any]] = []
        for r, (entries, retrieval, quality, combined, final, blend, estimated, tokens, cover, gain, notes) in \
                enumerate(zip(signals, *(a[at].tolist() for a in self.columns), rows_of(self.notes, rows),
                              strict=True)):
            d = {"signals": entries, "retrieval_score": retrieval, "quality_score": quality,
                 "combined_score": combined, "final_score": final, "blend_term": blend,
                 "reasons": (*notes, ESTIMATED) if estimated else notes, "token_count": tokens,
                 "token_count_estimated": estimated}
            if cover >= 0:
                d["covered_by"] = ids[cover]
            if gain == gain:  # not NaN
                d["marginal_gain"] = gain
            if ranked:
                d["bucket"] = {"index": r, "lower": lower[r], "upper": upper[r], "prior_score": final}
            out.append(d)
        return out


def outcome_to_proto(o: RankOutcome, batch: Batch, params: RankParams, request_id: str,
                     policy_version: str, receipt_key: bytes | None = None) -> pb.RankResponse:
    """The RankResponse for an outcome: selected in placement order, dropped in input order."""
    # Unset means SELECTED: full breakdowns for hundreds of dropped candidates dominated the response.
    explain = params.explain if params.explain != ExplainLevel.UNSPECIFIED else ExplainLevel.SELECTED
    ranked, positions, public = o.ranked.tolist(), o.positions.tolist(), o.public_score.tolist()
    full = explain == ExplainLevel.FULL
    ids, layer_of, drop, final = batch.ids, o.layer_of, o.drop.tolist(), o.final.tolist()
    ex = None if explain == ExplainLevel.NONE else Breakdowns(
        o.scores, batch, o.final, o.drop_notes, o.token_estimated, o.token_count, o.covered_by, o.gain,
        o.bucket_lower, o.bucket_upper)
    # Every selected memory and dropped candidate is a dict (its stages RankingStage's fields; its breakdown
    # ``Breakdowns.dicts``'): the constructor builds the whole response in C.
    selected = [{"id": ids[i], "layer": layer_of[i], "rank": r + 1, "position": p, "score": s,
                 "stages": [{"stage": t.stage, "objective": t.objective, "provenance": t.provenance,
                             "input_score": t.input_score, "position": t.position, "output_score": t.output_score}
                            for t in stages]}
                for r, (i, p, s, stages) in enumerate(zip(ranked, positions, public, o.stages, strict=True))]
    if ex is not None and ranked:
        for m, b in zip(selected, ex.dicts(ranked, ranked=True), strict=True):
            m["breakdown"] = b
    # Positions are a permutation of 0..k-1: sorting by position is the placement order.
    selected.sort(key=itemgetter("position"))
    # Below FULL a dropped candidate is four scalars, from the columns picked by the drop mask.
    dropped = [{"id": cid, "layer": layer, "reason": reason, "score": score}
               for cid, layer, reason, score in zip(compress(ids, drop), compress(layer_of, drop),
                                                    compress(drop, drop), compress(final, drop), strict=True)]
    if full and ex is not None and dropped:
        for d, b in zip(dropped, ex.dicts(list(compress(range(o.n), drop))), strict=True):
            d["breakdown"] = b
    resp = pb.RankResponse(
        request_id=request_id, weights=weights_to_proto(o.profile),
        scoring_schema=SCORING_SCHEMA, policy_version=policy_version, profile=o.profile.name,
        # Plain dicts: the constructor fills every entry in C. Named field by field, so the core's dataclasses
        # never have to match the wire's messages.
        allocations=[{"layer": a.layer, "budget_tokens": a.budget_tokens, "used_tokens": a.used_tokens,
                      "floor_tokens": a.floor_tokens, "candidate_count": a.candidate_count,
                      "selected_count": a.selected_count, "released_tokens": a.released_tokens,
                      "received_tokens": a.received_tokens} for a in o.allocations],
        importance_suggestions=[{"id": ids[i], "suggested_importance": v} for i, v in o.suggestions],
        selected=selected, dropped=dropped, reference_time=seconds_to_ts(params.reference_time),
        shadow=None if o.shadow is None else pb.ShadowComparison(
            profile=o.shadow.profile, k=o.shadow.k, overlap_at_k=o.shadow.overlap_at_k,
            kendall_tau=o.shadow.kendall_tau, selected_ids=o.shadow.selected_ids),
    )
    digest, signature = receipt.seal(receipt_payload(o, batch, params, resp), receipt_key)
    r = resp.receipt
    r.schema, r.digest, r.signature = receipt.SCHEMA, digest, signature
    return resp


def receipt_payload(o: RankOutcome, batch: Batch, params: RankParams, resp: pb.RankResponse) -> bytes:
    """The canonical receipt bytes of an answer: the request's inputs and every outcome, whatever the explain
    level (``core.explain.receipt``)."""
    return receipt.canonical(batch, o, params, resp.reference_time.seconds, resp.reference_time.nanos,
                             resp.policy_version)


def profiles_to_proto(profiles: Mapping[str, Profile], policy_version: str) -> pb.ListProfilesResponse:
    """Every profile, sorted by name."""
    return pb.ListProfilesResponse(policy_version=policy_version, profiles=[pb.Profile(
        name=p.name, description=p.description, weights=weights_to_proto(p), fusion=p.fusion,
        compatibility=p.compatibility, relevance_threshold=p.relevance_threshold or 0.0, min_score=p.min_score,
        diversity_lambda=p.diversity_lambda, relevance_floor=p.relevance_floor or 0.0,
    ) for p in (profiles[k] for k in sorted(profiles))])


def admission_to_proto(request_id: str, result: AdmissionResult, batch: Batch, profile: Profile,
                       reference_time: float) -> pb.ScoreAdmissionResponse:
    """The ScoreAdmissionResponse for one scored candidate: its breakdown is scoring's alone (the final score is
    the combined one, the notes are the gates' reasons, nothing of selection is written)."""
    s, n, none = result.scores, result.scores.n, np.zeros(0)
    breakdown = Breakdowns(s, batch, s.combined, s.gate_reasons, np.zeros(n, dtype=bool), np.zeros(n, dtype=np.int64),
                           np.full(n, -1, dtype=np.int64), np.full(n, np.nan), none, none).dicts([0])[0]
    return pb.ScoreAdmissionResponse(
        request_id=request_id, decision=pb.AdmissionDecision.ValueType(int(result.decision)), score=result.score,
        reasons=list(result.reasons),
        admit_threshold=profile.admit_threshold, hold_threshold=profile.hold_threshold, profile=profile.name,
        breakdown=breakdown,
        reference_time=seconds_to_ts(reference_time),
    )
