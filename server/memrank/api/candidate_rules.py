"""The candidate rules of a request, each declared once, over the candidates' columns (either request form).

A rule finds the rows that break it a column at a time (an ordinary request costs a few column reductions, no
per-candidate walk). Violations come out candidate by candidate, each candidate's in the order of ``RULES``, so
the first ``MAX_VIOLATIONS`` a client sees are the first candidates' problems.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.bounds import (
    ANY,
    MAX_FACET_ABS,
    MAX_LAYER_NAME_BYTES,
    MAX_NAME_BYTES,
    MAX_POSITION,
    SHOWN_CHARS,
    TIME_RANGE,
    UNIT,
    in_time_range,
    too_long,
)
from memrank.api.request_columns import TIME_FIELDS, CandidateColumns, OptionalColumn
from memrank.config import Limits
from memrank.core.errors import FieldViolation

Found = Iterator[tuple[int, FieldViolation]]  # (row, violation)
Rule = Callable[[CandidateColumns, Limits, tuple[float, float]], Found]


def shown(name: str) -> str:
    """A client-chosen name as an error may show it: at most SHOWN_CHARS characters."""
    return name if len(name) <= SHOWN_CHARS else name[:SHOWN_CHARS] + "..."


def name_problem(name: str) -> str | None:
    """Why a facet, stage or weight-override name is refused, or None."""
    if not name:
        return "names must be non-empty"
    size = len(name.encode())
    return f"a name of {size} bytes; at most {MAX_NAME_BYTES} bytes" if size > MAX_NAME_BYTES else None


def _text(field: str, column: str, limit_key: str | None) -> Rule:
    """At most ``limits.<limit_key>`` bytes (a fixed MAX_LAYER_NAME_BYTES when None)."""
    def rule(cols: CandidateColumns, limits: Limits, _r: tuple[float, float]) -> Found:
        limit = MAX_LAYER_NAME_BYTES if limit_key is None else getattr(limits, limit_key)
        said = f"at most {limit} bytes" + ("" if limit_key is None else f" (limits.{limit_key})")
        for i in too_long(getattr(cols, column), limit):
            yield i, FieldViolation(cols.paths.field(i, field), said)
    return rule


def _id(cols: CandidateColumns, limits: Limits, _r: tuple[float, float]) -> Found:
    ids = cols.ids
    empty = [] if all(ids) else [i for i, x in enumerate(ids) if not x]
    for i in sorted([*empty, *too_long(ids, limits.max_id_bytes)]):
        yield i, FieldViolation(cols.paths.field(i, "id"), "must be non-empty" if not ids[i] else
                                f"at most {limits.max_id_bytes} bytes (limits.max_id_bytes)")


def _set_rows(column: OptionalColumn, bad: np.ndarray) -> Iterator[tuple[int, object]]:
    """(row, value) of the set values that ``bad`` marks (``bad`` is over ``column.values``, the set rows)."""
    if bad.any():
        rows = np.flatnonzero(column.present)
        yield from ((int(rows[k]), column.values[k].item()) for k in np.flatnonzero(bad))


def _position(cols: CandidateColumns, _l: Limits, _r: tuple[float, float]) -> Found:
    v = cols.position.values  # int64: compared exactly, never through float64
    for i, x in _set_rows(cols.position, (v < 0) | (v > MAX_POSITION)):
        yield i, FieldViolation(cols.paths.field(i, "position"), f"must be in [0, {MAX_POSITION}] (2^53), got {x}")


def _finite(field: str, column: str, bounds: tuple[float, float] | None = None) -> Rule:
    """Finite and within ``bounds`` (None: the call's range of retrieval_score, ``validate.retrieval_range``)."""
    def rule(cols: CandidateColumns, _l: Limits, retrieval: tuple[float, float]) -> Found:
        lo, hi = retrieval if bounds is None else bounds
        said = "must be finite" if (lo, hi) == ANY else f"must be finite and in [{lo:g}, {hi:g}]"
        col = getattr(cols, column)
        if not isinstance(col, OptionalColumn):  # retrieval_score: every row has one
            col = OptionalColumn(np.ones(len(col), dtype=bool), col)
        ok = np.isfinite(col.values) if (lo, hi) == ANY else (col.values >= lo) & (col.values <= hi)  # NaN fails
        for i, x in _set_rows(col, ~ok):
            yield i, FieldViolation(cols.paths.field(i, field), f"{said}, got {x}")
    return rule


def _scores(field: str) -> Rule:
    """Each name non-empty and short (``name_problem``), each value finite and within +-MAX_FACET_ABS."""
    def rule(cols: CandidateColumns, _l: Limits, _r: tuple[float, float]) -> Found:
        p = cols.paths
        for name, column in (cols.facets if field == "facet_scores" else cols.stages).items():
            rows, values = column.present, column.values
            if (problem := name_problem(name)) is not None:
                yield from ((i, FieldViolation(p.field(i, field), problem)) for i in np.flatnonzero(rows).tolist())
                continue
            for i in np.flatnonzero(rows & ~(np.abs(values) <= MAX_FACET_ABS)).tolist():  # NaN fails too
                x = values[i].item()
                yield i, FieldViolation(p.key(i, field, name), f"must be finite, got {x}" if not np.isfinite(x)
                                        else f"must be within [-{MAX_FACET_ABS:g}, {MAX_FACET_ABS:g}], got {x}")
    return rule


def _stage_count(cols: CandidateColumns, limits: Limits, _r: tuple[float, float]) -> Found:
    if len(cols.stages) <= limits.max_stage_scores:
        return
    counts = np.sum([c.present for c in cols.stages.values()], axis=0)
    for i in np.flatnonzero(counts > limits.max_stage_scores).tolist():
        yield i, FieldViolation(cols.paths.field(i, "stage_scores"),
                                f"at most {limits.max_stage_scores} (limits.max_stage_scores)")


def _metadata(cols: CandidateColumns, limits: Limits, _r: tuple[float, float]) -> Found:
    rows, p = cols.metadata, cols.paths
    if all(len(m) <= limits.max_metadata_entries for _, m in rows) and \
            not too_long([k for _, m in rows for k in m], limits.max_metadata_key_bytes) and \
            not too_long([v for _, m in rows for v in m.values()], limits.max_metadata_value_bytes):
        return
    for i, m in rows:
        if len(m) > limits.max_metadata_entries:
            yield i, FieldViolation(p.field(i, "metadata"), f"at most {limits.max_metadata_entries} entries "
                                                            "(limits.max_metadata_entries)")
            continue
        for key, value in sorted(m.items()):
            if len(key.encode()) > limits.max_metadata_key_bytes:
                yield i, FieldViolation(p.field(i, "metadata"), f"a key of {len(key.encode())} bytes; at most "
                                        f"{limits.max_metadata_key_bytes} bytes (limits.max_metadata_key_bytes)")
            elif len(value.encode()) > limits.max_metadata_value_bytes:
                yield i, FieldViolation(p.key(i, "metadata", shown(key)), f"at most {limits.max_metadata_value_bytes}"
                                        " bytes (limits.max_metadata_value_bytes)")


def _times(cols: CandidateColumns, _l: Limits, _r: tuple[float, float]) -> Found:
    for name in TIME_FIELDS:
        t = cols.times[name]
        if t is not None:
            for i in np.flatnonzero(t.present & ~in_time_range(t.seconds, t.nanos)).tolist():
                yield i, FieldViolation(cols.paths.field(i, name), TIME_RANGE)


def _validity(cols: CandidateColumns, _l: Limits, _r: tuple[float, float]) -> Found:
    start, end = cols.times["valid_from"], cols.times["valid_to"]
    if start is not None and end is not None:
        before = (end.seconds < start.seconds) | ((end.seconds == start.seconds) & (end.nanos <= start.nanos))
        for i in np.flatnonzero(start.present & end.present & before).tolist():
            yield i, FieldViolation(cols.paths.field(i, "valid_to"), "must be after valid_from")


def _enum(field: str, column: str, known: frozenset[int]) -> Rule:
    def rule(cols: CandidateColumns, _l: Limits, _r: tuple[float, float]) -> Found:
        values = getattr(cols, column)
        if not known.issuperset(values):
            yield from ((i, FieldViolation(cols.paths.field(i, field), f"unknown enum value {v}"))
                        for i, v in enumerate(values) if v not in known)
    return rule


def _embedding(cols: CandidateColumns, limits: Limits, _r: tuple[float, float]) -> Found:
    """Candidate.embedding: within the dimension limit, finite (packed rows: ``validate``'s packed rule)."""
    limit = limits.max_embedding_dim
    bad = {i: "values must be finite" for i in cols.nonfinite_embeddings(limit)} if any(cols.embedding_lengths) \
        else {}
    bad.update((i, f"at most {limit} dimensions (limits.max_embedding_dim)")
               for i, n in enumerate(cols.embedding_lengths) if n > limit)
    yield from ((i, FieldViolation(cols.paths.field(i, "embedding"), said)) for i, said in sorted(bad.items()))


def _duplicate(cols: CandidateColumns, _l: Limits, _r: tuple[float, float]) -> Found:
    ids = cols.ids
    if len(set(ids)) == len(ids):
        return
    seen: dict[str, int] = {}
    for i, x in enumerate(ids):
        if x in seen:
            yield i, FieldViolation(cols.paths.field(i, "id"), f"duplicate of {cols.paths.field(seen[x], 'id')} "
                                                               f"({x!r})")
        elif x:
            seen[x] = i


def _one_dimension(cols: CandidateColumns, _l: Limits, _r: tuple[float, float]) -> Found:
    lengths = cols.embedding_lengths
    if len(set(lengths) - {0}) <= 1:
        return
    first = next(i for i, n in enumerate(lengths) if n)
    p, dim = cols.paths, lengths[first]
    for i, n in enumerate(lengths):
        if n and n != dim:
            yield i, FieldViolation(p.field(i, "embedding"), f"has {n} dimensions; {p.field(first, 'embedding')} "
                                                             f"has {dim}: one dimension per request")


# A candidate's rules in the order its violations are listed.
RULES: tuple[Rule, ...] = (
    _id, _text("layer", "layers", None), _text("content", "contents", "max_content_bytes"),
    _text("thread", "threads", "max_thread_bytes"), _position, _text("speaker", "speakers", "max_speaker_bytes"),
    _text("kind", "kinds", "max_kind_bytes"), _text("provenance", "provenance", "max_provenance_bytes"),
    _finite("retrieval_score", "retrieval"), _finite("importance", "importance", UNIT),
    # reranker_score: any finite value (the signal reads only the order; NaN in the columnar form is "no score")
    _finite("reranker_score", "reranker", ANY), _scores("facet_scores"), _scores("stage_scores"), _stage_count,
    _metadata, _times, _validity, _enum("source", "source", frozenset(pb.Source.values())),
    _enum("safety", "safety", frozenset(pb.SafetyStatus.values())), _embedding, _duplicate, _one_dimension,
)


def candidate_violations(cols: CandidateColumns, limits: Limits,
                         retrieval: tuple[float, float] = UNIT) -> list[FieldViolation]:
    """Every candidate rule's violations, candidate by candidate (a rule's own order kept within one)."""
    found = [(i, k, v) for k, rule in enumerate(RULES) for i, v in rule(cols, limits, retrieval)]
    found.sort(key=lambda f: (f[0], f[1]))  # stable: a rule's violations of one row stay in its order
    return [v for _, _, v in found]
