"""The answer back in a framework's terms: the selected documents, in placement order, each with its
explanation (rank, score, breakdown, stages, receipt) as plain JSON-ready values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memrank._gen.v1 import ranking_pb2 as pb


@dataclass(frozen=True)
class Selection:
    """A selected document: its index in the input and its explanation."""

    index: int
    score: float
    explanation: dict[str, Any]


def explanation(m: pb.RankedMemory, response: pb.RankResponse) -> dict[str, Any]:
    """A selected memory's rank, score, breakdown and reasons as plain (JSON-ready) values."""
    b = m.breakdown
    out: dict[str, Any] = {
        "id": m.id, "rank": m.rank, "position": m.position, "score": m.score, "layer": m.layer,
        "profile": response.profile,
    }
    if m.HasField("breakdown"):
        out.update({
            "retrieval_score": b.retrieval_score, "combined_score": b.combined_score, "final_score": b.final_score,
            "quality_score": b.quality_score, "blend_term": b.blend_term, "marginal_gain": b.marginal_gain,
            "token_count": b.token_count, "token_count_estimated": b.token_count_estimated,
            "reasons": list(b.reasons),
            "signals": {s.name: {"raw": s.raw, "normalized": s.normalized, "weight": s.weight,
                                 "contribution": s.contribution, "reasons": list(s.reasons)} for s in b.signals},
        })
    out["stages"] = [{"stage": s.stage, "objective": s.objective, "provenance": s.provenance,
                      "input_score": s.input_score, "output_score": s.output_score, "position": s.position}
                     for s in m.stages]
    out["receipt"] = response.receipt.digest
    return out


def selections(request: pb.RankRequest, response: pb.RankResponse) -> list[Selection]:
    """The selected documents, in placement order, as indices into the request's candidates."""
    at = {c.id: i for i, c in enumerate(request.candidates)}
    return [Selection(at[m.id], m.score, explanation(m, response)) for m in response.selected]
