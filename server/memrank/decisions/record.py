"""Captures as JSON records (``memrank.decision.v1``, ``memrank.feedback.v1``); runs in the writer process.

A decision record is columnar: ``candidates`` holds one array per field, all of
``candidates.count`` entries in the request's candidate order (index i of every
array is candidate i), which is compact and quick to write and reads straight
into numpy or a dataframe. Float columns (``FloatColumn``) are written with
each distinct value formatted once, the same text ``json.dumps`` gives. JSON
has no NaN: a value that is not a number is written as null. Times are RFC 3339
UTC with microseconds.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

import numpy as np

from memrank.core.explain.breakdown import LOGGED_SIGNAL_PARTS, signals
from memrank.core.text.words import estimated_tokens
from memrank.core.types import DropReason, Source
from memrank.decisions.mask import Masker

DECISION_SCHEMA = "memrank.decision.v1"
FEEDBACK_SCHEMA = "memrank.feedback.v1"
OUTCOMES = tuple("selected" if r == DropReason.KEPT else r.name.lower() for r in DropReason)
SOURCES = tuple(s.name.lower() for s in Source)
# Drop reasons a gate gives before scoring (the candidate took no part in normalisation or selection).
GATES = frozenset({"below_threshold", "zero_importance", "safety_gated", "future_event", "not_yet_valid", "expired"})


def rfc3339(seconds: float) -> str:
    """Epoch seconds as RFC 3339 UTC, microseconds."""
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _floats(a: np.ndarray) -> list[float | None]:
    values: list[float | None] = np.asarray(a, dtype=np.float64).tolist()
    if not np.isfinite(a).all():
        values = [v if v is not None and math.isfinite(v) else None for v in values]
    return values


def _optional_index(a: np.ndarray) -> list[int | None]:
    return [None if v < 0 else v for v in np.asarray(a).tolist()]


def decision_record(c: dict[str, Any], masker: Masker) -> dict[str, Any]:
    """The memrank.decision.v1 record of a decision capture."""
    ids = c["ids"]
    query = masker.one(c["query"]) if c["query"] is not None else {"length": c["query_length"]}
    query["tokens"] = estimated_tokens(query["length"])
    candidates: dict[str, Any] = {
        "count": len(ids),
        "id": list(ids),
        "layer": list(c["layers"]),
        "kind": list(c["kinds"]),
        "source": [SOURCES[v] if 0 <= v < len(SOURCES) else "unspecified" for v in c["sources"].tolist()],
        "content_length": c["content_length"].tolist(),
        "token_count": c["token_count"].tolist(),
        "token_count_estimated": c["token_estimated"].tolist(),
    }
    if c["contents"] is not None:
        candidates.update(masker.many(c["contents"]))
    candidates["signals"] = signals(c["signals"], LOGGED_SIGNAL_PARTS, FloatColumn)
    candidates["final_score"] = FloatColumn(c["final"])
    candidates["outcome"] = [OUTCOMES[v] for v in c["drop"].tolist()]
    candidates["rank"] = _optional_index(np.where(c["rank"] > 0, c["rank"], -1))
    candidates["position"] = _optional_index(c["position"])
    candidates["covered_by"] = [ids[j] if j >= 0 else None for j in c["covered_by"].tolist()]
    return {
        "schema": DECISION_SCHEMA,
        "decision_id": c["decision_id"],
        "request_id": c["request_id"],
        "server_time": rfc3339(c["server_time"]),
        "reference_time": rfc3339(c["reference_time"]),
        "profile": c["profile"],
        "policy_version": c["policy_version"],
        "weights": [{"signal": name, "weight": weight, "normalization": norm} for name, weight, norm in c["weights"]],
        "shadow": c["shadow"],
        "forced": c["forced"],
        "content": masker.mode,
        "query": query,
        "candidates": candidates,
        "allocations": c["allocations"],
    }


def feedback_record(c: dict[str, Any]) -> dict[str, Any]:
    """The memrank.feedback.v1 record of a feedback capture."""
    return {
        "schema": FEEDBACK_SCHEMA,
        "feedback_id": c["feedback_id"],
        "decision_id": c["decision_id"] or None,
        "request_id": c["request_id"] or None,
        "labeler": c["labeler"] or None,
        "server_time": rfc3339(c["server_time"]),
        "labels": [{"candidate_id": cid, "relevance": grade} for cid, grade in c["labels"]],
    }


class FloatColumn:
    """A float64 column written as a JSON array: the same text ``json.dumps`` gives its ``tolist()`` (None for a
    value that is not finite), with each distinct value formatted once (columns repeat values: 0, 1, a weight)."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = np.asarray(values, dtype=np.float64)

    def json(self) -> str:
        """The column as a JSON array."""
        if self.values.size == 0:
            return "[]"
        # Distinct by bit pattern, so -0.0 and 0.0 stay apart as json.dumps writes them.
        bits, inverse = np.unique(np.ascontiguousarray(self.values).view(np.int64), return_inverse=True)
        text = [repr(v) if math.isfinite(v) else "null" for v in bits.view(np.float64).tolist()]
        return "[" + ",".join([text[i] for i in inverse.ravel().tolist()]) + "]"

    def tolist(self) -> list[float | None]:
        """The values as Python data (what ``json`` writes)."""
        return _floats(self.values)


def _encode(value: Any) -> str:
    """JSON of record data whose float columns are FloatColumns (compact separators, UTF-8 as is)."""
    if isinstance(value, FloatColumn):
        return value.json()
    if isinstance(value, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + _encode(v) for k, v in value.items()) + "}"
    if isinstance(value, list) and value and isinstance(value[0], dict | FloatColumn):
        return "[" + ",".join(map(_encode, value)) + "]"
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def plain(value: Any) -> Any:
    """Record data with every FloatColumn turned into a list (for validation and tests)."""
    if isinstance(value, FloatColumn):
        return value.tolist()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def to_line(c: dict[str, Any], masker: Masker) -> bytes:
    """One capture as one JSON line (UTF-8, ending in a newline; no newline inside)."""
    record = decision_record(c, masker) if c["kind"] == "decision" else feedback_record(c)
    return (_encode(record) + "\n").encode()
