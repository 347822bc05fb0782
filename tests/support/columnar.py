"""The per-candidate form of a RankRequest rewritten in the columnar form (RankRequest.columns), written from the
proto's comments alone (no server code): the oracle of the tests that both forms give the same answer."""

from __future__ import annotations

import math
import struct

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.convert import seconds_to_ts
from memrank.core.batch import CandidateInput

TIMES = ("created_at", "last_accessed_at", "event_time", "ingested_at", "valid_from", "valid_to")
TEXTS = {"layer": "layers", "kind": "kinds", "content": "contents", "provenance": "provenance",
         "thread": "threads", "speaker": "speakers"}


def representable(req: pb.RankRequest) -> bool:
    """Whether the columnar form can say what ``req`` says: NaN is how a matrix says "no score", a name lives
    once per column (so it is a valid one), and the embeddings travel packed (one dimension, when any)."""
    for c in req.candidates:
        for scores in (c.facet_scores, c.stage_scores):
            if any(not k or len(k.encode()) > 128 or math.isnan(v) for k, v in scores.items()):
                return False
        if c.HasField("reranker_score") and math.isnan(c.reranker_score):  # the column's NaN means "no score"
            return False
    lengths = {len(c.embedding) for c in req.candidates} - {0}
    return not (lengths and (len(lengths) > 1 or req.embeddings_f32 or req.embedding_dim or max(lengths) > 4096))


def to_columnar(req: pb.RankRequest) -> pb.RankRequest:
    """``req`` with its candidates as ``columns`` (every column sent, as a client would; embeddings packed)."""
    out = pb.RankRequest()
    out.CopyFrom(req)
    out.ClearField("candidates")
    cands = list(req.candidates)
    cols = out.columns
    cols.SetInParent()
    cols.ids.extend(c.id for c in cands)
    for field, column in TEXTS.items():
        getattr(cols, column).extend(getattr(c, field) for c in cands)
    cols.retrieval_scores.extend(c.retrieval_score for c in cands)
    cols.importance.extend(c.importance for c in cands)
    cols.importance_present.extend(c.HasField("importance") for c in cands)
    cols.access_counts.extend(c.access_count for c in cands)
    cols.token_counts.extend(c.token_count for c in cands)
    cols.sources.extend(c.source for c in cands)
    cols.safety.extend(c.safety for c in cands)
    cols.positions.extend(c.position for c in cands)
    cols.positions_present.extend(c.HasField("position") for c in cands)
    if any(c.HasField("reranker_score") for c in cands):
        cols.reranker_scores.extend(c.reranker_score if c.HasField("reranker_score") else math.nan for c in cands)
    for name in TIMES:
        column = getattr(cols, name)
        column.seconds.extend(getattr(c, name).seconds for c in cands)
        column.nanos.extend(getattr(c, name).nanos for c in cands)
        column.present.extend(c.HasField(name) for c in cands)
    for names, matrix, field in (("facet_names", "facet_scores", "facet_scores"),
                                 ("stage_names", "stage_scores", "stage_scores")):
        keys = sorted({k for c in cands for k in getattr(c, field)})
        getattr(cols, names).extend(keys)
        getattr(cols, matrix).extend(getattr(c, field).get(k, math.nan) for c in cands for k in keys)
    for c in cands:
        cols.metadata.add().entries.update(c.metadata)
    dim = max((len(c.embedding) for c in cands), default=0)
    if dim and not req.embeddings_f32:
        zeros = [0.0] * dim
        out.embeddings_f32 = b"".join(struct.pack(f"<{dim}f", *(c.embedding or zeros)) for c in cands)
        out.embedding_dim = dim
    return out


def column_path(path: str) -> str:
    """A per-candidate violation's field path as the columnar form names it: ``candidates[3].retrieval_score``
    -> ``columns.retrieval_scores[3]``; ``candidates[3].facet_scores["bm25"]`` -> ``columns.facet_scores[3]["bm25"]``
    """
    if not path.startswith("candidates["):
        return path
    index, rest = path[len("candidates["):].split("].", 1)
    field, _, key = rest.partition("[")
    names = {"id": "ids", "retrieval_score": "retrieval_scores", "access_count": "access_counts",
             "token_count": "token_counts", "source": "sources", "position": "positions",
             "reranker_score": "reranker_scores", **TEXTS}
    return f"columns.{names.get(field, field)}[{index}]" + (f"[{key}" if key else "")


def candidate_row(c: pb.Candidate) -> CandidateInput:
    """One proto Candidate as a row, field by field (the slow reader ``CandidateColumns`` is compared with)."""
    def stamp(name: str) -> float | None:
        t = getattr(c, name)
        return t.seconds + t.nanos / 1e9 if c.HasField(name) else None

    return CandidateInput(
        id=c.id, layer=c.layer, kind=c.kind, content=c.content, retrieval_score=c.retrieval_score,
        facet_scores=dict(c.facet_scores), importance=c.importance if c.HasField("importance") else None,
        access_count=c.access_count, token_count=c.token_count, source=c.source, provenance=c.provenance,
        safety=c.safety, embedding=tuple(c.embedding), stage_scores=dict(c.stage_scores),
        metadata=dict(c.metadata), thread=c.thread, position=c.position if c.HasField("position") else None,
        speaker=c.speaker, **{name: stamp(name) for name in TIMES},
    )


def candidate_message(row: CandidateInput) -> pb.Candidate:
    """A row as a proto Candidate (``candidate_row``'s inverse; the bench builds its requests with it too)."""
    c = pb.Candidate(
        id=row.id, layer=row.layer, kind=row.kind, content=row.content, retrieval_score=row.retrieval_score,
        facet_scores=dict(row.facet_scores), access_count=row.access_count, token_count=row.token_count,
        source=pb.Source.ValueType(row.source), provenance=row.provenance,
        safety=pb.SafetyStatus.ValueType(row.safety), embedding=list(row.embedding),
        stage_scores=dict(row.stage_scores), metadata=dict(row.metadata), thread=row.thread, speaker=row.speaker,
    )
    if row.importance is not None:
        c.importance = row.importance
    if row.position is not None:
        c.position = row.position
    for name in TIMES:
        value = getattr(row, name)
        if value is not None:
            getattr(c, name).CopyFrom(seconds_to_ts(value))
    return c
