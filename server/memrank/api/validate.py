"""Validation at the edge: every rule of a RankRequest, with field paths, before scoring.

The request's own fields are checked here; its candidates, in either form, are read into columns
(``request_columns``) and checked by ``candidate_rules``, each rule declared once. The columnar form's shape
(every column empty or one value per id) is checked first, as nothing can be read from a ragged column.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from itertools import islice

import numpy as np

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.bounds import (
    ANY,
    MAX_LAYER_NAME_BYTES,
    MAX_NAME_BYTES,
    MAX_REQUEST_ID_BYTES,
    MAX_VIOLATIONS,
    MAX_WEIGHT_OVERRIDES,
    TIME_RANGE,
    UNIT,
    in_time_range,
    too_long,
)
from memrank.api.candidate_rules import candidate_violations, name_problem
from memrank.api.columnar_candidates import columns_of
from memrank.api.request_columns import CandidateColumns, Paths
from memrank.config import Limits
from memrank.core.errors import FieldViolation, InvalidRequest, LimitExceeded
from memrank.core.profile import SHARE_RANGE, THRESHOLD_RANGE, WEIGHT_RANGE, Profile


def _check_in(path: str, value: float, bounds: tuple[float, float]) -> Iterator[FieldViolation]:
    if not (math.isfinite(value) and bounds[0] <= value <= bounds[1]):
        yield FieldViolation(path, f"must be in [{bounds[0]:g}, {bounds[1]:g}], got {value}")


# The fields a Rank and a ScoreAdmission request share.
def _check_id(req: pb.RankRequest | pb.ScoreAdmissionRequest) -> Iterator[FieldViolation]:
    if len(req.request_id.encode()) > MAX_REQUEST_ID_BYTES:
        yield FieldViolation("request_id", f"at most {MAX_REQUEST_ID_BYTES} bytes")


def _check_time(req: pb.RankRequest | pb.ScoreAdmissionRequest) -> Iterator[FieldViolation]:
    if req.HasField("reference_time") and not in_time_range(req.reference_time.seconds, req.reference_time.nanos):
        yield FieldViolation("reference_time", TIME_RANGE)


# Each enum's numbers as a set, once (``EnumTypeWrapper.values()`` builds a list on every call).
_ENUMS = (("placement", frozenset(pb.Placement.values())), ("explain", frozenset(pb.ExplainLevel.values())))


def _check_layers(req: pb.RankRequest) -> Iterator[FieldViolation]:
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
        if not math.isfinite(layer.share) or layer.share < 0:
            yield FieldViolation(f"{p}.share", f"must be finite and >= 0, got {layer.share}")
        if layer.HasField("min_score"):
            yield from _check_in(f"{p}.min_score", layer.min_score, UNIT)


def _check_request(req: pb.RankRequest, limits: Limits, cols: CandidateColumns,
                   retrieval: tuple[float, float]) -> Iterator[FieldViolation]:
    yield from _check_id(req)
    for name in ("profile", "shadow_profile"):
        if len(getattr(req, name).encode()) > MAX_NAME_BYTES:
            yield FieldViolation(name, f"at most {MAX_NAME_BYTES} bytes")
    if len(req.weight_overrides) > MAX_WEIGHT_OVERRIDES:
        yield FieldViolation("weight_overrides", f"at most {MAX_WEIGHT_OVERRIDES} entries")
    yield from _check_time(req)
    for name, known in _ENUMS:
        if (value := getattr(req, name)) not in known:
            yield FieldViolation(name, f"unknown enum value {value}")
    if req.HasField("min_score"):
        yield from _check_in("min_score", req.min_score, SHARE_RANGE)
    if req.HasField("relevance_threshold"):
        yield from _check_in("relevance_threshold", req.relevance_threshold, THRESHOLD_RANGE)
    for name, value in sorted(req.weight_overrides.items()):
        if name and (problem := name_problem(name)) is not None:  # empty: "has no signal" (core.pipeline)
            yield FieldViolation("weight_overrides", problem)
        else:
            yield from _check_in(f'weight_overrides["{name}"]', value, WEIGHT_RANGE)
    yield from _check_layers(req)
    yield from _check_packed(cols, limits)
    yield from candidate_violations(cols, limits, retrieval)
    yield from _check_facet_count(len(cols.facets), "candidates.facet_scores", limits)  # columns: ``_check_shape``


def _check_facet_count(count: int, path: str, limits: Limits) -> Iterator[FieldViolation]:
    if count > limits.max_facets:
        yield FieldViolation(path, f"{count} distinct facets; at most {limits.max_facets} (limits.max_facets)")


# The columns of one value per id (the names of the two matrices and the matrices aside).
_COLUMNS = frozenset(f.name for f in pb.CandidateColumns.DESCRIPTOR.fields if f.is_repeated
                     and f.name not in ("ids", "facet_names", "facet_scores", "stage_names", "stage_scores"))
_TIME = pb.TimeColumn.DESCRIPTOR


def _check_shape(req: pb.RankRequest, limits: Limits) -> Iterator[FieldViolation]:
    """A columnar request: one form only, every column empty or one value per id, named matrices."""
    if len(req.candidates):
        said = "one form per request: candidates or columns, not both"
        yield from (FieldViolation("candidates", said), FieldViolation("columns", said))
        return
    c = req.columns
    # Only the columns the request sets (``ListFields``, in field-number order: the message's order): an
    # unset column is empty, which every shape allows (a wrapper per column read was most of this check).
    present = c.ListFields()
    given = {fd.name: value for fd, value in present}
    n = len(given.get("ids", ()))
    paths = [(f"columns.{fd.name}", column) for fd, column in present if fd.name in _COLUMNS]
    paths += [(f"columns.{fd.name}.{part.name}", column) for fd, t in present if fd.message_type is _TIME
              for part, column in t.ListFields()]
    for path, column in paths:
        if len(column) not in (0, n):
            yield FieldViolation(path, f"{len(column)} values; one per id ({n}) or none")
    for names, matrix in (("facet_names", "facet_scores"), ("stage_names", "stage_scores")):
        seen: dict[str, int] = {}
        for j, name in enumerate(given.get(names, ())):
            if (problem := name_problem(name)) is not None:
                yield FieldViolation(f"columns.{names}[{j}]", problem)
            elif name in seen:
                yield FieldViolation(f"columns.{names}[{j}]", f"duplicate of columns.{names}[{seen[name]}]")
            seen.setdefault(name, j)
        if names == "facet_names":  # before a column is read per name
            yield from _check_facet_count(len(seen), "columns.facet_names", limits)
        size, expected = len(given.get(matrix, ())), n * len(given.get(names, ()))
        if size != expected:
            yield FieldViolation(f"columns.{matrix}", f"{size} values; len(ids) x len({names}) = {expected}")


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
        yield FieldViolation(cols.paths.field(first, "embedding"), "must be empty when embeddings_f32 is set "
                                                                   "(the packed matrix carries every candidate's row)")
    matrix = cols.embeddings
    assert matrix is not None  # packed: a view of the bytes
    if not np.isfinite(matrix).all():
        row, col = (int(x) for x in np.argwhere(~np.isfinite(matrix))[0])
        yield FieldViolation("embeddings_f32", f"values must be finite; row {row} ({cols.paths.row(row)}) "
                                               f"column {col} is {matrix[row, col]}")


def _first(violations: Iterator[FieldViolation]) -> list[FieldViolation]:
    return list(islice(violations, MAX_VIOLATIONS))


def validate_rank_request(req: pb.RankRequest, limits: Limits, cols: CandidateColumns | None = None,
                          profiles: Mapping[str, Profile] | None = None) -> CandidateColumns:
    """Raise LimitExceeded or InvalidRequest naming every bad field (up to MAX_VIOLATIONS); else the candidate
    columns it read, for ``convert.request_to_domain``. ``profiles``: ``retrieval_range``'s (None: [0, 1])."""
    columnar = req.HasField("columns")
    n = len(req.columns.ids) if columnar else len(req.candidates)
    if n > limits.max_candidates:
        raise LimitExceeded([FieldViolation("columns.ids" if columnar else "candidates", f"{n} candidates; at "
                                            f"most {limits.max_candidates} (limits.max_candidates)")])
    if len(req.layers) > limits.max_layers:
        raise LimitExceeded([FieldViolation("layers", f"{len(req.layers)} layers; at most {limits.max_layers} "
                                            "(limits.max_layers)")])
    if too_long([req.query], limits.max_query_bytes):
        raise LimitExceeded([FieldViolation("query", f"at most {limits.max_query_bytes} bytes "
                                            "(limits.max_query_bytes)")])
    if columnar and (shape := _first(_check_shape(req, limits))):
        raise InvalidRequest(shape)
    if cols is None:
        cols = columns_of(req)
    named = [req.profile or "default", *([req.shadow_profile] if req.shadow_profile else [])]
    violations = _first(_check_request(req, limits, cols, UNIT if profiles is None else
                                       retrieval_range(named, profiles)))
    if violations:
        raise InvalidRequest(violations)
    return cols


def retrieval_range(named: Sequence[str], profiles: Mapping[str, Profile]) -> tuple[float, float]:
    """The range of ``retrieval_score`` in a call ranked under each of the ``named`` profiles: [0, 1]; any finite
    value when every one uses the Go scorer's formula (``scoreMemory`` adds 0.30 x any float64; NaN and infinities
    would leave the order undefined: docs/concepts/profiles.md)."""
    if all(name in profiles and profiles[name].formula == "agent_observer" for name in named):
        return ANY
    return UNIT


def validate_admission_request(req: pb.ScoreAdmissionRequest, limits: Limits) -> CandidateColumns:
    """Raise InvalidRequest when the admission request is malformed; else the candidate's columns."""
    if not req.HasField("candidate"):
        raise InvalidRequest([FieldViolation("candidate", "required")])
    cols = CandidateColumns([req.candidate], paths=Paths("candidate"))
    violations = [*_check_id(req), *_check_time(req), *candidate_violations(cols, limits)]
    if violations:
        raise InvalidRequest(violations[:MAX_VIOLATIONS])
    return cols
