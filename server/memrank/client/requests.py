"""Requests as the Python clients send them: messages from dicts (no JSON conversion), candidates as columns,
packed embeddings, feedback by decision.

A dict is read as protobuf JSON would be (camelCase keys, and the snake_case field names too; times as RFC 3339
strings; enums by name or number), but straight into the message: ``RankRequest`` dicts put their candidates
in the columnar form (``RankRequest.columns``, one repeated field per Candidate field, filled a column at a
time) with the embeddings packed as ``embeddings_f32``; the server answers both forms alike.
"""

from __future__ import annotations

import base64
import datetime
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp
from numpy.typing import ArrayLike

from memrank._gen.v1 import ranking_pb2 as pb

T = TypeVar("T", bound=Message)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_SECOND = datetime.timedelta(seconds=1)


def _names(descriptor: Descriptor) -> dict[str, FieldDescriptor]:
    return {**{f.json_name: f for f in descriptor.fields}, **descriptor.fields_by_name}


def _field(names: Mapping[str, FieldDescriptor], key: str, where: str) -> FieldDescriptor:
    field = names.get(key)
    if field is None:
        raise ValueError(f"{where} has no field {key!r}")
    return field


def time_of(value: Any) -> tuple[int, int]:
    """(seconds, nanos) of an RFC 3339 string, a datetime (naive: UTC), epoch seconds, a Timestamp, or a
    {"seconds", "nanos"} dict."""
    if isinstance(value, str):
        head, dot, rest = value.partition(".")
        if not dot:
            return _whole_seconds(datetime.datetime.fromisoformat(value)), 0
        digits = rest[:len(rest) - len(rest.lstrip("0123456789"))]
        return _whole_seconds(datetime.datetime.fromisoformat(head + rest[len(digits):])), \
            int(digits[:9].ljust(9, "0")) if digits else 0
    if isinstance(value, datetime.datetime):
        return _whole_seconds(value.replace(microsecond=0)), value.microsecond * 1000
    if isinstance(value, Timestamp):
        return value.seconds, value.nanos
    if isinstance(value, Mapping):
        return int(value.get("seconds", 0)), int(value.get("nanos", 0))
    if isinstance(value, int | float) and not isinstance(value, bool):
        floor = math.floor(value)
        return floor, min(round((value - floor) * 1e9), 999_999_999)
    raise TypeError(f"a time must be an RFC 3339 string, a datetime or epoch seconds, got {type(value).__name__}")


# RFC 3339 in UTC as protobuf JSON writes a Timestamp, each digit written as 0: the shapes one numpy parse of a
# column reads (_utc_strings); checking a column's few shapes, not each value, costs 0.2 ms at 1,600 values, a
# regular expression over every value 1.1-1.5 ms
_SHAPE = re.compile(rb"0000-00-00T00:00:00(?:\.0+)?Z")
_DIGITS_AS_0 = bytes.maketrans(b"123456789", b"000000000")
_NONE = type(None)
_MICROS = 27  # the length of a stamp with at most 6 digits of a second: numpy reads it to the microsecond
_YEAR_1 = -62_135_596_800  # 0001-01-01T00:00:00Z: numpy reads year 0, datetime (time_of) refuses it


def time_column(values: Sequence[Any]) -> tuple[list[int], list[int]]:
    """Seconds and nanos of each value as ``time_of`` reads it ((0, 0) where None), a column at a time."""
    missing = _unsent(values)
    sent = [v for v in values if v is not None] if missing else values
    parsed = _utc_strings(sent)
    if parsed is None:
        stamps = [time_of(v) for v in sent]
        parsed = np.array([s for s, _ in stamps], dtype=np.int64), np.array([ns for _, ns in stamps], dtype=np.int64)
    seconds, nanos = parsed
    if missing:
        mask = np.array([v is not None for v in values])
        seconds, nanos = np.zeros(len(values), np.int64), np.zeros(len(values), np.int64)
        seconds[mask], nanos[mask] = parsed
    return seconds.tolist(), nanos.tolist()


def _utc_strings(values: Sequence[Any]) -> tuple[np.ndarray, np.ndarray] | None:
    """Seconds and nanos of strings of protobuf JSON's own form ("2026-01-01T12:00:00.5Z"), parsed by numpy as one
    column; None for anything else, which ``time_of`` then reads one value at a time (and names what is wrong).
    Pays: building the bench's dict request (bench.drivers.request_dict), p50 at 100 / 400 / 1,600 candidates
    1.50 / 7.36 / 29.3 ms -> 0.83 / 2.56 / 13.9 ms; the fraction read by the same numpy parse (to the
    microsecond) rather than per string: building + serialising 4.58 / 16.28 -> 4.10 / 14.79 M instructions at
    100 / 400."""
    try:
        joined = "\n".join(values).encode("ascii")
    except (TypeError, UnicodeEncodeError):  # not all strings, or not ASCII: not of that form
        return None
    each = joined.translate(_DIGITS_AS_0).split(b"\n")
    shapes = set(each)
    if not values or len(each) != len(values) or not all(map(_SHAPE.fullmatch, shapes)):
        return None  # (a newline of a value's own would split it in two)
    width = len(values[0])  # of one shape: each stamp read in place, without the Z, from the joined bytes
    # (not a Python string each: building the bench's dicts, 12.20 / 38.0 -> 11.75 / 35.9 M instructions at 400 /
    # 1,600, -3.7 / -5.5 %)
    stamps = np.ndarray((len(values),), f"S{width - 1}", joined, strides=(width + 1,)) if len(shapes) == 1 else \
        joined.decode()[:-1].split("Z\n")  # numpy reads str 20 % faster than bytes
    try:  # microseconds since the epoch (int64: every year 1 to 9999), without the Z numpy warns about
        micros = np.array(stamps, dtype="datetime64[us]").astype(np.int64)
    except ValueError:  # a day, hour, minute or second out of range: time_of says which
        return None
    seconds, fraction = np.divmod(micros, 1_000_000)
    if seconds.min() < _YEAR_1:
        return None
    if max(map(len, values)) <= _MICROS:
        return seconds, fraction * 1000
    return seconds, np.array([int(v[20:-1][:9].ljust(9, "0")) if len(v) > 20 else 0 for v in values], np.int64)


def _whole_seconds(moment: datetime.datetime) -> int:
    """Epoch seconds of a datetime without microseconds (naive: UTC)."""
    seconds: int = ((moment if moment.tzinfo is not None else moment.replace(tzinfo=datetime.UTC)) - _EPOCH) // _SECOND
    return seconds


_FLOATS = (FieldDescriptor.CPPTYPE_DOUBLE, FieldDescriptor.CPPTYPE_FLOAT)
_INTS = (FieldDescriptor.CPPTYPE_INT32, FieldDescriptor.CPPTYPE_INT64, FieldDescriptor.CPPTYPE_UINT32,
         FieldDescriptor.CPPTYPE_UINT64)


def _scalar(field: FieldDescriptor, value: Any) -> Any:
    """A protobuf-JSON value as the field holds it: enum names, base64 bytes, "NaN" and 64-bit integers as text."""
    if not isinstance(value, str):
        return value
    if field.enum_type is not None:
        return field.enum_type.values_by_name[value].number
    if field.type == FieldDescriptor.TYPE_BYTES:
        return base64.b64decode(value)
    return float(value) if field.cpp_type in _FLOATS else int(value) if field.cpp_type in _INTS else value


def _values(field: str, values: list[Any], default: Any) -> list[Any]:
    """A column's values: ``default`` where not sent (None), text numbers and enum names as _scalar reads them."""
    types = set(map(type, values))
    out = [default if v is None else v for v in values] if _NONE in types else values
    if field in _TEXTS or not any(issubclass(t, str) for t in types):
        return out
    numbers = _ENUM_NUMBERS.get(field)
    if numbers is not None:  # one dict lookup a name
        return [numbers[v] if isinstance(v, str) else v for v in out]
    return [_scalar(_CANDIDATE[field], v) for v in out]


def fill(msg: T, data: Mapping[str, Any]) -> T:
    """``msg`` with the fields of a protobuf-JSON-shaped dict set (camelCase or snake_case keys)."""
    descriptor = msg.DESCRIPTOR
    names = _names(descriptor)
    for key, value in data.items():
        if value is None:
            continue
        field = _field(names, key, descriptor.name)
        target = getattr(msg, field.name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            entry = field.message_type.fields_by_name["value"]
            target.update({k: _scalar(entry, v) for k, v in value.items()})
        elif field.message_type is Timestamp.DESCRIPTOR and not field.is_repeated:
            target.seconds, target.nanos = time_of(value)
        elif field.message_type is not None:
            for item, sub in zip(value, (target.add() for _ in value), strict=True) if field.is_repeated else \
                    ((value, target),):
                sub.CopyFrom(item) if isinstance(item, Message) else fill(sub, item)
        elif field.is_repeated:
            target.extend(_scalar(field, v) for v in value)
        else:
            setattr(msg, field.name, _scalar(field, value))
    return msg


def as_message(value: Message | Mapping[str, Any], cls: type[T]) -> T:
    """A message from a message (as it is) or a protobuf-JSON-shaped dict."""
    if isinstance(value, cls):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(f"expected {cls.__name__} or a dict, got {type(value).__name__}")
    return fill(cls(), value)


_CANDIDATE = _names(pb.Candidate.DESCRIPTOR)
_TEXTS = {"id": "ids", "layer": "layers", "kind": "kinds", "content": "contents", "provenance": "provenance",
          "thread": "threads", "speaker": "speakers"}
_NUMBERS = {"retrieval_score": "retrieval_scores", "access_count": "access_counts", "token_count": "token_counts"}
_ENUMS = {"source": "sources", "safety": "safety"}
_OPTIONAL = {"importance": ("importance", "importance_present"), "position": ("positions", "positions_present")}
_NAN_UNSET = {"reranker_score": "reranker_scores"}  # optional numbers whose column says "unset" with NaN
_TIMES = ("created_at", "last_accessed_at", "event_time", "ingested_at", "valid_from", "valid_to")
_MATRICES = {"facet_scores": "facet_names", "stage_scores": "stage_names"}
_ENUM_NUMBERS = {field: {v.name: v.number for v in _CANDIDATE[field].enum_type.values} for field in _ENUMS}


def _by_field(cands: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """Each Candidate field sent by any candidate: its value per candidate (None where not sent).

    A column is read with one ``dict.get`` per candidate; a field sent under two names (``retrievalScore`` and
    ``retrieval_score``) takes, per candidate, the one that comes last in its dict, as ``fill`` would."""
    keys: dict[str, list[str]] = {}
    for key in set().union(*cands):
        keys.setdefault(_field(_CANDIDATE, key, "Candidate").name, []).append(key)
    out: dict[str, list[Any]] = {}
    for name, spelled in keys.items():
        if len(spelled) == 1:
            key = spelled[0]
            out[name] = [c.get(key) for c in cands]
        else:
            out[name] = [next((c[k] for k in reversed(list(c)) if k in spelled), None) for c in cands]
    return out


def _unsent(values: Sequence[Any]) -> bool:
    """Whether some candidate left the field out (None), told by the column's types (``None in values`` would
    compare each value with None)."""
    return _NONE in set(map(type, values))


def _or(values: list[Any], default: Any) -> list[Any]:
    return [default if v is None else v for v in values] if _unsent(values) else values


class _PerCandidate(Exception):
    """What the columnar form cannot say as sent (a NaN score is "no score" there): send the candidates as they are."""


def columns_of(cands: Sequence[Mapping[str, Any]], cols: pb.CandidateColumns) -> list[Any] | None:
    """Fill ``cols`` with candidate dicts in the columnar form; their ``embedding`` values (None when none sends
    one).

    Raises _PerCandidate for a NaN facet or stage score or an empty or overlong name (refused per candidate)."""
    by = _by_field(cands)
    n = len(cands)
    cols.ids.extend(_or(by.pop("id", [None] * n), ""))
    for field, column in {**_TEXTS, **_NUMBERS, **_ENUMS}.items():
        if field in by:
            getattr(cols, column).extend(_values(field, by.pop(field), "" if field in _TEXTS else 0))
    for field, (column, present) in _OPTIONAL.items():
        if field in by:
            values = by.pop(field)
            getattr(cols, column).extend(_values(field, values, 0))
            if _unsent(values):
                getattr(cols, present).extend([v is not None for v in values])
    for field, column in _NAN_UNSET.items():
        if field in by:
            sent = by.pop(field)
            numbers = list(map(float, _values(field, sent, math.nan)))
            if sum(map(math.isnan, numbers)) != sent.count(None):
                raise _PerCandidate  # a NaN sent as a score: the server refuses it on its candidate
            getattr(cols, column).extend(numbers)
    for field in _TIMES:
        if field in by:
            values, target = by.pop(field), getattr(cols, field)
            seconds, nanos = time_column(values)
            target.seconds.extend(seconds)
            if any(nanos):
                target.nanos.extend(nanos)
            if _unsent(values):
                target.present.extend([v is not None for v in values])
    for field, names in _MATRICES.items():
        if field in by:
            maps = _or(by.pop(field), {})
            keys = sorted({k for m in maps for k in m})
            values = [float(m.get(k, math.nan)) for m in maps for k in keys]
            if any(not k or len(k.encode()) > 128 for k in keys) or sum(map(math.isnan, values)) != \
                    n * len(keys) - sum(map(len, maps)):
                raise _PerCandidate  # a NaN score or a bad name: the server names it on its candidate
            getattr(cols, names).extend(keys)
            getattr(cols, field).extend(values)
    if "metadata" in by:
        for m in _or(by.pop("metadata"), {}):
            cols.metadata.add().entries.update(m)
    embeddings = by.pop("embedding", None)
    if by:
        raise ValueError(f"Candidate field {sorted(by)[0]!r} has no column")  # none: every field has one
    return embeddings


def rank_request(value: pb.RankRequest | Mapping[str, Any], embeddings: ArrayLike | None = None) -> pb.RankRequest:
    """The RankRequest of a message (as it is; a copy packed when ``embeddings`` is given) or of a dict (its
    candidates as columns, their embeddings or ``embeddings`` packed)."""
    if isinstance(value, pb.RankRequest):
        return value if embeddings is None else pack_embeddings(value, embeddings)
    if not isinstance(value, Mapping):
        raise TypeError(f"expected RankRequest or a dict, got {type(value).__name__}")
    cands = value.get("candidates") or ()
    msg = fill(pb.RankRequest(), {k: v for k, v in value.items() if k != "candidates"})
    if isinstance(cands, Sequence) and all(issubclass(t, Mapping) for t in set(map(type, cands))) \
            and put_columns(msg, cands, embeddings):
        return msg
    fill(msg, {"candidates": cands})  # messages among them, or embeddings of several dimensions: as sent
    return msg if embeddings is None else pack_embeddings(msg, embeddings)


def put_columns(msg: pb.RankRequest, cands: Sequence[Mapping[str, Any]],
                embeddings: ArrayLike | None = None) -> bool:
    """Set ``msg.columns`` to candidate dicts (Candidate field names, values as ``fill`` reads them) and pack
    their embeddings (or ``embeddings``) into ``embeddings_f32``; False, ``msg`` untouched, when ``msg`` has
    columns already or the columns cannot carry them as sent: a NaN facet or stage score, a bad facet name,
    embeddings of several dimensions (sent per candidate instead, the server names the offending candidate)."""
    if msg.HasField("columns"):
        return False
    try:
        rows = columns_of(cands, msg.columns)  # straight into the message: a copy of the columns is 0.3 ms at 1,600
        matrix = embeddings if embeddings is not None else _rows(rows)
    except _PerCandidate:
        msg.ClearField("columns")
        return False
    if matrix is not None:
        _packed(msg, matrix, len(cands))
    return True


def _rows(rows: list[Any] | None) -> np.ndarray | None:
    """The candidates' own embeddings as one matrix (zero rows where missing, as the server reads them), None
    when no candidate has one; raises _PerCandidate when they differ in dimension (the server names it)."""
    if rows is None:
        return None
    dims = {len(r) for r in rows if r is not None} - {0}
    if not dims:
        return None
    if len(dims) > 1:
        raise _PerCandidate
    dim = dims.pop()
    matrix = np.zeros((len(rows), dim), dtype="<f4")
    for i, r in enumerate(rows):
        if r is not None and len(r):
            matrix[i] = r
    return matrix


def _packed(msg: pb.RankRequest, embeddings: ArrayLike, n: int) -> pb.RankRequest:
    matrix = np.ascontiguousarray(embeddings, dtype="<f4")
    if matrix.ndim != 2 or matrix.shape[0] != n or matrix.shape[1] == 0:
        raise ValueError(f"embeddings must be an ({n}, dim) matrix with dim >= 1 (one row per candidate), "
                         f"got shape {matrix.shape}")
    msg.embeddings_f32 = matrix.tobytes()
    msg.embedding_dim = matrix.shape[1]
    return msg


_FIELD_OF = {column: field for field, column in {**_TEXTS, **_NUMBERS, **_ENUMS}.items()} | {
    column: field for field, (column, _) in _OPTIONAL.items()} | {column: field for field, column in _NAN_UNSET.items()}
_COLUMN_PATH = re.compile(r"columns\.(\w+)\[(\d+)\]")


def in_candidate_words(text: str) -> str:
    """A violation of a request this client sent as columns, in the words of the dict it was given: the column
    and row ``columns.retrieval_scores[3]`` is the dict's ``candidates[3].retrieval_score``."""
    text = _COLUMN_PATH.sub(lambda m: f"candidates[{m.group(2)}].{_FIELD_OF.get(m.group(1), m.group(1))}", text)
    return {"columns.ids": "candidates", "columns.facet_names": "candidates.facet_scores"}.get(text, text)


def candidates_of(req: pb.RankRequest) -> list[pb.Candidate]:
    """A request's candidates as messages, whichever form it sent them in (for receipts and accounting)."""
    if not req.HasField("columns"):
        return list(req.candidates)
    c = req.columns
    n = len(c.ids)
    out = [pb.Candidate(id=i) for i in c.ids]
    for field, column in {**_TEXTS, **_NUMBERS, **_ENUMS}.items():
        for cand, v in zip(out, getattr(c, column), strict=False):
            setattr(cand, field, v)
    for field, (column, present) in _OPTIONAL.items():
        values, mask = getattr(c, column), getattr(c, present)
        for i, v in enumerate(values):
            if not len(mask) or mask[i]:
                setattr(out[i], field, v)
    for field, column in _NAN_UNSET.items():
        for cand, v in zip(out, getattr(c, column), strict=False):
            if not math.isnan(v):
                setattr(cand, field, v)
    for field in _TIMES:
        t = getattr(c, field)
        for i, s in enumerate(t.seconds):
            if not len(t.present) or t.present[i]:
                getattr(out[i], field).seconds, getattr(out[i], field).nanos = s, t.nanos[i] if len(t.nanos) else 0
    for field, names in _MATRICES.items():
        keys, values = list(getattr(c, names)), getattr(c, field)
        for i in range(n if keys else 0):
            getattr(out[i], field).update({k: v for j, k in enumerate(keys)
                                           if not math.isnan(v := values[i * len(keys) + j])})
    for cand, row in zip(out, c.metadata, strict=False):
        cand.metadata.update(row.entries)
    return out


def pack_embeddings(request: pb.RankRequest, embeddings: ArrayLike | None = None) -> pb.RankRequest:
    """A copy of ``request`` with its embeddings packed into ``embeddings_f32`` / ``embedding_dim``.

    ``embeddings`` is an (n, dim) array-like with one row per candidate, in
    candidate order (a numpy float32 matrix is used as it is); without it, the
    candidates' own ``embedding`` fields are moved into the matrix, which then
    needs every candidate to carry one of one dimension. The copy's
    candidates carry no ``embedding`` (the server refuses both at once).
    Raises ValueError when the shapes do not fit.
    """
    n = len(request.columns.ids) if request.HasField("columns") else len(request.candidates)
    if embeddings is None:
        lengths = {len(c.embedding) for c in request.candidates}
        if len(lengths) != 1 or 0 in lengths:
            raise ValueError("packing needs every candidate to carry an embedding of one dimension; "
                             f"got dimensions {sorted(lengths)}")
        embeddings = np.array([c.embedding for c in request.candidates], dtype="<f4")
    out = pb.RankRequest()
    out.CopyFrom(request)
    for c in out.candidates:
        if len(c.embedding):
            c.ClearField("embedding")
    return _packed(out, embeddings, n)


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
