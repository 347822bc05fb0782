"""RecordFeedback at the edge: validation naming the field, the wire check of the grades (what protobuf parses
without complaint but reads wrong), and the feedback's content-derived id."""

from __future__ import annotations

import hashlib
import json
import re

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.wire import spans, varint
from memrank.config import Limits
from memrank.core.errors import FieldViolation, InvalidRequest

MAX_RELEVANCE = 3
MAX_LABELER_BYTES = 128
_DIGEST = re.compile(r"[0-9a-f]{64}")


def validate_feedback(req: pb.RecordFeedbackRequest, limits: Limits) -> None:
    """InvalidRequest naming every bad field of a RecordFeedbackRequest."""
    bad: list[FieldViolation] = []
    if not req.decision_id and not req.request_id:
        bad.append(FieldViolation("decision_id", "decision_id or request_id is required (the Rank call's "
                                  "receipt.digest or request_id)"))
    if req.decision_id and not _DIGEST.fullmatch(req.decision_id):
        bad.append(FieldViolation("decision_id", "must be 64 lowercase hex digits (RankResponse.receipt.digest)"))
    if len(req.request_id.encode()) > limits.max_id_bytes:
        bad.append(FieldViolation("request_id", f"longer than {limits.max_id_bytes} bytes (limits.max_id_bytes)"))
    if len(req.labeler.encode()) > MAX_LABELER_BYTES:
        bad.append(FieldViolation("labeler", f"longer than {MAX_LABELER_BYTES} bytes"))
    if not req.labels:
        bad.append(FieldViolation("labels", "at least one label is required"))
    if len(req.labels) > limits.max_candidates:
        bad.append(FieldViolation("labels", f"{len(req.labels)} labels; at most {limits.max_candidates} "
                                  "(limits.max_candidates)"))
    seen: set[str] = set()
    for i, label in enumerate(req.labels[: limits.max_candidates]):
        where = f"labels[{i}]"
        if not label.candidate_id:
            bad.append(FieldViolation(f"{where}.candidate_id", "required"))
        elif len(label.candidate_id.encode()) > limits.max_id_bytes:
            bad.append(FieldViolation(f"{where}.candidate_id", f"longer than {limits.max_id_bytes} bytes "
                                      "(limits.max_id_bytes)"))
        elif label.candidate_id in seen:
            bad.append(FieldViolation(f"{where}.candidate_id", f"duplicate id {label.candidate_id[:40]!r}"))
        seen.add(label.candidate_id)
        if label.relevance > MAX_RELEVANCE:
            bad.append(FieldViolation(f"{where}.relevance", f"{label.relevance} is outside 0..{MAX_RELEVANCE}"))
        if len(bad) >= 20:
            break
    if bad:
        raise InvalidRequest(bad)


_LABELS, _RELEVANCE, _UINT32 = 3, 2, 0xFFFFFFFF
_WIRE_NAMES = {1: "a 64-bit value (a double?)", 2: "length-delimited bytes", 5: "a 32-bit value (a float?)"}


def relevance_wire_violations(data: bytes) -> list[FieldViolation]:
    """labels[i].relevance sent as something protobuf reads silently wrong: another wire type (a double NaN is
    kept as an unknown field and the grade reads 0) or a varint past 2^32 - 1 (cut to its low 32 bits)."""
    bad: list[FieldViolation] = []
    index = 0
    try:
        for number, wire, _, body, end in spans(data):
            if number != _LABELS or wire != 2:
                continue
            for field, kind, _, start, _ in spans(data[body:end]):
                if field != _RELEVANCE:
                    continue
                where = f"labels[{index}].relevance"
                if kind != 0:
                    bad.append(FieldViolation(where, f"sent as {_WIRE_NAMES.get(kind, 'another wire type')}, "
                                              f"not a uint32; a grade is a whole number 0..{MAX_RELEVANCE}"))
                elif (value := varint(data, body + start)[0]) > _UINT32:
                    bad.append(FieldViolation(where, f"{value} is outside 0..{MAX_RELEVANCE} (past uint32)"))
            index += 1
    except ValueError:
        return bad  # protobuf parsed it: only a hostile tail gets here; what was found stands
    return bad[:20]


def feedback_id(req: pb.RecordFeedbackRequest) -> str:
    """SHA-256 hex of the feedback's canonical JSON (labels sorted by id): equal feedback, equal id."""
    canonical = json.dumps([req.decision_id, req.request_id, req.labeler,
                            sorted((label.candidate_id, label.relevance) for label in req.labels)],
                           ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()
