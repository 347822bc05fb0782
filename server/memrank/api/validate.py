"""Validation at the edge: every rule of a RankRequest, with field paths, before scoring.

One module past 250 lines on purpose: it is the list of the wire's rules (a reader looking for "what is
refused, and with which words" finds all of them here); the fixed bounds are ``bounds``', the column-wise
proof that skips the per-candidate walk is ``fastpath``'s.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping

import numpy as np
from google.protobuf.timestamp_pb2 import Timestamp

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.bounds import (
    ANY,
    MAX_FACET_ABS,
    MAX_LAYER_NAME_BYTES,
    MAX_NAME_BYTES,
    MAX_POSITION,
    MAX_REQUEST_ID_BYTES,
    MAX_SECONDS,
    MAX_VIOLATIONS,
    MAX_WEIGHT_OVERRIDES,
    MIN_SECONDS,
    SHOWN_CHARS,
    UNIT,
    utf8_within,
)
from memrank.api.fastpath import clearly_valid
from memrank.api.request_columns import TIME_FIELDS, CandidateColumns
from memrank.config import Limits
from memrank.core.errors import FieldViolation, InvalidRequest, LimitExceeded
from memrank.core.profile import SHARE_RANGE, THRESHOLD_RANGE, WEIGHT_RANGE, Profile


def _within(value: float, bounds: tuple[float, float]) -> bool:
    return _finite(value) and bounds[0] <= value <= bounds[1]


def _range(bounds: tuple[float, float]) -> str:
    """[0, 1] as the error says it (whole numbers without .0)."""
    return "[" + ", ".join(f"{b:g}" for b in bounds) + "]"


def _finite(x: float) -> bool:
    return math.isfinite(x)


def _check_time(path: str, ts: Timestamp) -> Iterator[FieldViolation]:
    if not MIN_SECONDS <= ts.seconds <= MAX_SECONDS or not 0 <= ts.nanos <= 999_999_999:
        yield FieldViolation(path, "timestamp outside 0001-01-01..9999-12-31 or nanos outside [0, 999999999]")


# Each enum's numbers as a set, once (``EnumTypeWrapper.values()`` builds a list on every call).
_KNOWN: dict[object, frozenset[int]] = {e: frozenset(e.values()) for e in (pb.Source, pb.SafetyStatus, pb.Placement,
                                                                          pb.ExplainLevel)}


def _check_enum(path: str, value: int, enum: object) -> Iterator[FieldViolation]:
    if value not in _KNOWN[enum]:
        yield FieldViolation(path, f"unknown enum value {value}")


def _shown(name: str) -> str:
    """A client-chosen name as an error may show it: at most SHOWN_CHARS characters."""
    return name if len(name) <= SHOWN_CHARS else name[:SHOWN_CHARS] + "..."


def _check_scores(path: str, scores: Iterable[tuple[str, float]], bound: float | None) -> Iterator[FieldViolation]:
    for name, value in sorted(scores):
        if not name:
            yield FieldViolation(f"{path}", "names must be non-empty")
        elif len(name.encode()) > MAX_NAME_BYTES:
            yield FieldViolation(f"{path}", f"a name of {len(name.encode())} bytes; at most {MAX_NAME_BYTES} bytes")
        elif not _finite(value):
            yield FieldViolation(f'{path}["{name}"]', f"must be finite, got {value}")
        elif bound is not None and abs(value) > bound:
            yield FieldViolation(f'{path}["{name}"]', f"must be within [-{bound:g}, {bound:g}], got {value}")


def _check_metadata(path: str, metadata: Mapping[str, str], limits: Limits) -> Iterator[FieldViolation]:
    for key, value in sorted(metadata.items()):
        if len(key.encode()) > limits.max_metadata_key_bytes:
            yield FieldViolation(path, f"a key of {len(key.encode())} bytes; at most {limits.max_metadata_key_bytes} "
                                       "bytes (limits.max_metadata_key_bytes)")
        elif len(value.encode()) > limits.max_metadata_value_bytes:
            yield FieldViolation(f'{path}["{_shown(key)}"]', f"at most {limits.max_metadata_value_bytes} bytes "
                                                             "(limits.max_metadata_value_bytes)")


def _check_candidate(i: int, c: pb.Candidate, limits: Limits,
                     retrieval: tuple[float, float] = UNIT) -> Iterator[FieldViolation]:
    p = f"candidates[{i}]"
    if not c.id:
        yield FieldViolation(f"{p}.id", "must be non-empty")
    elif len(c.id.encode()) > limits.max_id_bytes:
        yield FieldViolation(f"{p}.id", f"at most {limits.max_id_bytes} bytes (limits.max_id_bytes)")
    if len(c.layer.encode()) > MAX_LAYER_NAME_BYTES:
        yield FieldViolation(f"{p}.layer", f"at most {MAX_LAYER_NAME_BYTES} bytes")
    if len(c.content.encode()) > limits.max_content_bytes:
        yield FieldViolation(f"{p}.content", f"at most {limits.max_content_bytes} bytes (limits.max_content_bytes)")
    if len(c.thread.encode()) > limits.max_thread_bytes:
        yield FieldViolation(f"{p}.thread", f"at most {limits.max_thread_bytes} bytes (limits.max_thread_bytes)")
    if c.HasField("position") and not 0 <= c.position <= MAX_POSITION:
        yield FieldViolation(f"{p}.position", f"must be in [0, {MAX_POSITION}] (2^53), got {c.position}")
    if len(c.speaker.encode()) > limits.max_speaker_bytes:
        yield FieldViolation(f"{p}.speaker", f"at most {limits.max_speaker_bytes} bytes (limits.max_speaker_bytes)")
    if len(c.kind.encode()) > limits.max_kind_bytes:
        yield FieldViolation(f"{p}.kind", f"at most {limits.max_kind_bytes} bytes (limits.max_kind_bytes)")
    if len(c.provenance.encode()) > limits.max_provenance_bytes:
        yield FieldViolation(f"{p}.provenance", f"at most {limits.max_provenance_bytes} bytes "
                                                "(limits.max_provenance_bytes)")
    if not _finite(c.retrieval_score) or not retrieval[0] <= c.retrieval_score <= retrieval[1]:
        yield FieldViolation(f"{p}.retrieval_score", f"must be finite and in [0, 1], got {c.retrieval_score}"
                             if retrieval == UNIT else f"must be finite, got {c.retrieval_score}")
    if c.HasField("importance") and (not _finite(c.importance) or not 0.0 <= c.importance <= 1.0):
        yield FieldViolation(f"{p}.importance", f"must be finite and in [0, 1], got {c.importance}")
    yield from _check_scores(f"{p}.facet_scores", c.facet_scores.items(), MAX_FACET_ABS)
    yield from _check_scores(f"{p}.stage_scores", c.stage_scores.items(), MAX_FACET_ABS)
    if len(c.stage_scores) > limits.max_stage_scores:
        yield FieldViolation(f"{p}.stage_scores", f"at most {limits.max_stage_scores} (limits.max_stage_scores)")
    if len(c.metadata) > limits.max_metadata_entries:
        yield FieldViolation(f"{p}.metadata", f"at most {limits.max_metadata_entries} entries "
                                              "(limits.max_metadata_entries)")
    else:
        yield from _check_metadata(f"{p}.metadata", c.metadata, limits)
    for name in TIME_FIELDS:
        if c.HasField(name):
            yield from _check_time(f"{p}.{name}", getattr(c, name))
    if c.HasField("valid_from") and c.HasField("valid_to") and (
        (c.valid_to.seconds, c.valid_to.nanos) <= (c.valid_from.seconds, c.valid_from.nanos)
    ):
        yield FieldViolation(f"{p}.valid_to", "must be after valid_from")
    yield from _check_enum(f"{p}.source", c.source, pb.Source)
    yield from _check_enum(f"{p}.safety", c.safety, pb.SafetyStatus)
    if len(c.embedding) > limits.max_embedding_dim:
        yield FieldViolation(f"{p}.embedding", f"at most {limits.max_embedding_dim} dimensions "
                                               "(limits.max_embedding_dim)")
    elif c.embedding and not np.isfinite(np.asarray(c.embedding, dtype=np.float64)).all():
        yield FieldViolation(f"{p}.embedding", "values must be finite")


def _check_candidates(req: pb.RankRequest, limits: Limits,
                      retrieval: tuple[float, float]) -> Iterator[FieldViolation]:
    seen: dict[str, int] = {}
    dim: tuple[int, int] | None = None
    facets: set[str] = set()
    for i, c in enumerate(req.candidates):
        yield from _check_candidate(i, c, limits, retrieval)
        if c.id in seen:
            yield FieldViolation(f"candidates[{i}].id", f"duplicate of candidates[{seen[c.id]}].id ({c.id!r})")
        elif c.id:
            seen[c.id] = i
        if c.embedding:
            if dim is None:
                dim = (len(c.embedding), i)
            elif len(c.embedding) != dim[0]:
                yield FieldViolation(f"candidates[{i}].embedding", f"has {len(c.embedding)} dimensions; "
                                     f"candidates[{dim[1]}].embedding has {dim[0]}: one dimension per request")
        facets.update(c.facet_scores)
    if len(facets) > limits.max_facets:
        yield FieldViolation("candidates.facet_scores", f"{len(facets)} distinct facets; at most "
                             f"{limits.max_facets} (limits.max_facets)")


def _check_layers(req: pb.RankRequest, limits: Limits) -> Iterator[FieldViolation]:
    names: set[str] = set()
    for i, layer in enumerate(req.layers):
        p = f"layers[{i}]"
        if not layer.name:
            yield FieldViolation(f"{p}.name", "must be non-empty")
        elif len(layer.name.encode()) > MAX_LAYER_NAME_BYTES:
            yield FieldViolation(f"{p}.name", f"at most {MAX_LAYER_NAME_BYTES} bytes")
        elif layer.name in names:
            yield FieldViolation(f"{p}.name", f"duplicate layer {layer.name!r}")
        names.add(layer.name)
        if not _finite(layer.share) or layer.share < 0:
            yield FieldViolation(f"{p}.share", f"must be finite and >= 0, got {layer.share}")
        if layer.HasField("min_score") and (not _finite(layer.min_score) or not 0 <= layer.min_score <= 1):
            yield FieldViolation(f"{p}.min_score", f"must be in [0, 1], got {layer.min_score}")


def _check_request(req: pb.RankRequest, limits: Limits, candidates: bool = True,
                   cols: CandidateColumns | None = None,
                   retrieval: tuple[float, float] = UNIT) -> Iterator[FieldViolation]:
    if len(req.request_id.encode()) > MAX_REQUEST_ID_BYTES:
        yield FieldViolation("request_id", f"at most {MAX_REQUEST_ID_BYTES} bytes")
    for name in ("profile", "shadow_profile"):
        if len(getattr(req, name).encode()) > MAX_NAME_BYTES:
            yield FieldViolation(name, f"at most {MAX_NAME_BYTES} bytes")
    if len(req.weight_overrides) > MAX_WEIGHT_OVERRIDES:
        yield FieldViolation("weight_overrides", f"at most {MAX_WEIGHT_OVERRIDES} entries")
    if req.HasField("reference_time"):
        yield from _check_time("reference_time", req.reference_time)
    yield from _check_enum("placement", req.placement, pb.Placement)
    yield from _check_enum("explain", req.explain, pb.ExplainLevel)
    if req.HasField("min_score") and not _within(req.min_score, SHARE_RANGE):
        yield FieldViolation("min_score", f"must be in {_range(SHARE_RANGE)}, got {req.min_score}")
    if req.HasField("relevance_threshold") and not _within(req.relevance_threshold, THRESHOLD_RANGE):
        yield FieldViolation("relevance_threshold",
                             f"must be in {_range(THRESHOLD_RANGE)}, got {req.relevance_threshold}")
    for name, value in sorted(req.weight_overrides.items()):
        if len(name.encode()) > MAX_NAME_BYTES:
            yield FieldViolation("weight_overrides", f"a name of {len(name.encode())} bytes; at most "
                                                     f"{MAX_NAME_BYTES} bytes")
        elif not _within(value, WEIGHT_RANGE):
            yield FieldViolation(f'weight_overrides["{name}"]', f"must be in {_range(WEIGHT_RANGE)}, got {value}")
    yield from _check_layers(req, limits)
    yield from _check_packed(cols if cols is not None else CandidateColumns.of(req), limits)
    if candidates:
        yield from _check_candidates(req, limits, retrieval)


def _check_packed(cols: CandidateColumns, limits: Limits) -> Iterator[FieldViolation]:
    """The packed embeddings (``embeddings_f32`` with ``embedding_dim``), when either is set."""
    dim, data = cols.dim, cols.packed
    if not dim and not data:
        return
    if not data:
        yield FieldViolation("embeddings_f32", f"required when embedding_dim is set (embedding_dim {dim})")
        return
    if not dim:
        yield FieldViolation("embedding_dim", "required when embeddings_f32 is set (float32 values per row, "
                                              f"1..{limits.max_embedding_dim})")
        return
    if dim > limits.max_embedding_dim:
        yield FieldViolation("embedding_dim", f"at most {limits.max_embedding_dim} dimensions "
                                              f"(limits.max_embedding_dim), got {dim}")
        return
    n = cols.n
    if len(data) != n * dim * 4:
        yield FieldViolation("embeddings_f32", f"expected {n * dim * 4} bytes ({n} candidates x embedding_dim "
                                               f"{dim} x 4 bytes of float32), got {len(data)}")
        return
    if any(cols.embedding_lengths):
        first = next(i for i, length in enumerate(cols.embedding_lengths) if length)
        yield FieldViolation(f"candidates[{first}].embedding", "must be empty when embeddings_f32 is set "
                                                               "(the packed matrix carries every candidate's row)")
    matrix = cols.embeddings
    assert matrix is not None  # packed: a view of the bytes
    if not np.isfinite(matrix).all():
        row, col = (int(x) for x in np.argwhere(~np.isfinite(matrix))[0])
        yield FieldViolation("embeddings_f32", f"values must be finite; row {row} (candidates[{row}]) "
                                               f"column {col} is {matrix[row, col]}")


def _first(violations: Iterator[FieldViolation]) -> list[FieldViolation]:
    out = []
    for v in violations:
        out.append(v)
        if len(out) >= MAX_VIOLATIONS:
            break
    return out


def validate_rank_request(req: pb.RankRequest, limits: Limits, cols: CandidateColumns | None = None,
                          profiles: Mapping[str, Profile] | None = None) -> CandidateColumns:
    """Raise LimitExceeded or InvalidRequest naming every bad field (up to MAX_VIOLATIONS).

    ``profiles`` (the server's) decide the range of ``retrieval_score`` (``retrieval_range``); without
    them it is [0, 1]. Returns the candidate columns it read, for ``convert.request_to_domain`` to reuse.
    """
    if len(req.candidates) > limits.max_candidates:
        raise LimitExceeded([FieldViolation("candidates", f"{len(req.candidates)} candidates; at most "
                                            f"{limits.max_candidates} (limits.max_candidates)")])
    if len(req.layers) > limits.max_layers:
        raise LimitExceeded([FieldViolation("layers", f"{len(req.layers)} layers; at most {limits.max_layers} "
                                            "(limits.max_layers)")])
    if not utf8_within([req.query], limits.max_query_bytes):
        raise LimitExceeded([FieldViolation("query", f"at most {limits.max_query_bytes} bytes "
                                            "(limits.max_query_bytes)")])
    if cols is None:
        cols = CandidateColumns.of(req)
    retrieval = retrieval_range(req, profiles)
    # The fast path proves only the candidate rules; request-level fields are always checked.
    violations = _first(_check_request(req, limits, candidates=not clearly_valid(cols, limits, retrieval),
                                       cols=cols, retrieval=retrieval))
    if violations:
        raise InvalidRequest(violations)
    return cols


def retrieval_range(req: pb.RankRequest, profiles: Mapping[str, Profile] | None) -> tuple[float, float]:
    """[0, 1]; any finite value when the profile and the shadow profile (if any) use the Go scorer's formula.

    Go's ``scoreMemory`` adds 0.30 x relevance for any float64 relevance (1.5, -2), so ``agent-observer``
    (formula ``agent_observer``) takes any finite ``retrieval_score``; NaN and infinities are still refused,
    as they would leave the order undefined. Every other profile reads it as a score in [0, 1].
    """
    if profiles is None:
        return UNIT
    named = [req.profile or "default", *([req.shadow_profile] if req.shadow_profile else [])]
    if all(name in profiles and profiles[name].formula == "agent_observer" for name in named):
        return ANY
    return UNIT


def validate_admission_request(req: pb.ScoreAdmissionRequest, limits: Limits) -> None:
    """Raise InvalidRequest when the admission request is malformed."""
    if not req.HasField("candidate"):
        raise InvalidRequest([FieldViolation("candidate", "required")])
    violations = []
    if len(req.request_id.encode()) > MAX_REQUEST_ID_BYTES:
        violations.append(FieldViolation("request_id", f"at most {MAX_REQUEST_ID_BYTES} bytes"))
    if req.HasField("reference_time"):
        violations.extend(_check_time("reference_time", req.reference_time))
    violations.extend(v for v in _check_candidate(0, req.candidate, limits))
    if violations:
        for k, v in enumerate(violations):
            violations[k] = FieldViolation(v.field.replace("candidates[0]", "candidate", 1), v.description)
        raise InvalidRequest(violations[:MAX_VIOLATIONS])
