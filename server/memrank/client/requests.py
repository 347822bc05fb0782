"""Requests as the Python clients send them: messages from dicts, packed embeddings, feedback by decision."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import numpy as np
from google.protobuf import json_format
from google.protobuf.message import Message
from numpy.typing import ArrayLike

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.convert import candidate_to_proto
from memrank.core.batch import CandidateInput

T = TypeVar("T", bound=Message)


def as_message(value: Message | Mapping[str, Any], cls: type[T]) -> T:
    """A message from a message or a protobuf-JSON-shaped dict (CandidateInput rows allowed)."""
    if isinstance(value, cls):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(f"expected {cls.__name__} or a dict, got {type(value).__name__}")
    data = dict(value)
    rows = [c for c in data.get("candidates", ()) if isinstance(c, CandidateInput)]
    if rows:
        data["candidates"] = [c for c in data["candidates"] if not isinstance(c, CandidateInput)]
    msg = json_format.ParseDict(data, cls())
    if rows and isinstance(msg, pb.RankRequest):
        msg.candidates.extend(candidate_to_proto(r) for r in rows)
    return msg


def pack_embeddings(request: pb.RankRequest, embeddings: ArrayLike | None = None) -> pb.RankRequest:
    """A copy of ``request`` with its embeddings packed into ``embeddings_f32`` / ``embedding_dim``.

    ``embeddings`` is an (n, dim) array-like with one row per candidate, in
    candidate order (a numpy float32 matrix is used as it is); without it, the
    candidates' own ``embedding`` fields are moved into the matrix, which then
    needs every candidate to carry one of one dimension. The copy's
    candidates carry no ``embedding`` (the server refuses both at once).
    Raises ValueError when the shapes do not fit.
    """
    n = len(request.candidates)
    if embeddings is None:
        lengths = {len(c.embedding) for c in request.candidates}
        if len(lengths) != 1 or 0 in lengths:
            raise ValueError("packing needs every candidate to carry an embedding of one dimension; "
                             f"got dimensions {sorted(lengths)}")
        matrix = np.array([c.embedding for c in request.candidates], dtype="<f4")
    else:
        matrix = np.ascontiguousarray(embeddings, dtype="<f4")
        if matrix.ndim != 2 or matrix.shape[0] != n or matrix.shape[1] == 0:
            raise ValueError(f"embeddings must be an ({n}, dim) matrix with dim >= 1 (one row per candidate), "
                             f"got shape {matrix.shape}")
    out = pb.RankRequest()
    out.CopyFrom(request)
    for c in out.candidates:
        if len(c.embedding):
            c.ClearField("embedding")
    out.embeddings_f32 = matrix.tobytes()
    out.embedding_dim = matrix.shape[1]
    return out


def packable(request: pb.RankRequest) -> bool:
    """Every candidate carries an embedding of one dimension, and nothing is packed yet."""
    if not request.candidates or request.embeddings_f32 or request.embedding_dim:
        return False
    lengths = {len(c.embedding) for c in request.candidates}
    return len(lengths) == 1 and 0 not in lengths


def feedback_request(decision: str | pb.RankResponse, labels: Mapping[str, int],
                      labeler: str) -> pb.RecordFeedbackRequest:
    if isinstance(decision, pb.RankResponse):
        msg = pb.RecordFeedbackRequest(decision_id=decision.receipt.digest, request_id=decision.request_id)
    else:
        msg = pb.RecordFeedbackRequest(decision_id=decision)
    msg.labeler = labeler
    msg.labels.extend(pb.FeedbackLabel(candidate_id=cid, relevance=grade) for cid, grade in labels.items())
    return msg
