"""The answer back in a framework's terms: the selected documents, in placement order, each with its
explanation (rank, score, breakdown, stages, receipt) as plain JSON-ready values."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.core.explain.breakdown import breakdown


@dataclass(frozen=True)
class Selection:
    """A selected document: its index in the input and its explanation."""

    index: int
    score: float
    explanation: dict[str, Any]


def _plain(value: Any) -> Any:
    """A message's field as a plain value: a repeated field (the reasons) as a list."""
    return value if isinstance(value, str | int | float) else list(value)


def explanation(m: pb.RankedMemory, response: pb.RankResponse) -> dict[str, Any]:
    """A selected memory's rank, score, breakdown and reasons as plain (JSON-ready) values."""
    out: dict[str, Any] = {
        "id": m.id, "rank": m.rank, "position": m.position, "score": m.score, "layer": m.layer,
        "profile": response.profile,
    }
    if m.HasField("breakdown"):
        out.update(breakdown(m.breakdown, _plain))
    out["stages"] = [{"stage": s.stage, "objective": s.objective, "provenance": s.provenance,
                      "input_score": s.input_score, "output_score": s.output_score, "position": s.position}
                     for s in m.stages]
    out["receipt"] = response.receipt.digest
    return out


def candidate_ids(request: pb.RankRequest) -> Sequence[str]:
    """The ids of a request's candidates in order, whichever form it sent them in."""
    return request.columns.ids if request.HasField("columns") else [c.id for c in request.candidates]


def selections(request: pb.RankRequest, response: pb.RankResponse) -> list[Selection]:
    """The selected documents, in placement order, as indices into the request's candidates."""
    at = {ident: i for i, ident in enumerate(candidate_ids(request))}
    return [Selection(at[m.id], m.score, explanation(m, response)) for m in response.selected]
