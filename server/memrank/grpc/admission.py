"""ScoreAdmission adapter: proto -> core admission scoring -> proto."""

from __future__ import annotations

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.config import Settings
from memrank.core.admission import score_admission
from memrank.core.batch import batch_from_rows
from memrank.core.pipeline import resolve_profile
from memrank.core.scores import ScoringContext
from memrank.grpc import convert


def admission_to_proto(
    req: pb.ScoreAdmissionRequest, settings: Settings, now: float, provenance_key: bytes | None
) -> pb.ScoreAdmissionResponse:
    """Score the request's candidate for admission under its profile (default lians-admission)."""
    profile = resolve_profile(settings.profiles, req.profile or "lians-admission")
    ref = convert.ts_to_seconds(req.reference_time) if req.HasField("reference_time") else now
    batch = batch_from_rows([convert.candidate_to_domain(req.candidate)])
    result = score_admission(batch, ScoringContext("", ref, False, provenance_key), profile)
    s = result.scores
    breakdown = pb.ScoreBreakdown(
        signals=[pb.SignalScore(name=c.name, raw=float(c.raw[0]), normalized=float(c.normalized[0]),
                                weight=c.weight, contribution=float(c.contribution[0]), reasons=c.reasons[0])
                 for c in s.signals],
        retrieval_score=float(batch.retrieval[0]), quality_score=float(s.quality[0]),
        combined_score=float(s.combined[0]), final_score=float(s.combined[0]), blend_term=float(s.blend_term[0]),
        reasons=list(s.gate_reasons[0]),
    )
    resp = pb.ScoreAdmissionResponse(
        request_id=req.request_id, decision=int(result.decision), score=result.score, breakdown=breakdown,
        reasons=list(result.reasons), admit_threshold=profile.admit_threshold,
        hold_threshold=profile.hold_threshold, profile=profile.name,
    )
    resp.reference_time.CopyFrom(convert.seconds_to_ts(ref))
    return resp
