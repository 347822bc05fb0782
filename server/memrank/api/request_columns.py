"""A RankRequest's candidates read once, a column at a time: what validation's rules (``candidate_rules``) and the
conversion to a core ``Batch`` both read. Every column is read on first use and kept; ``paths`` names a row's field
in the form it came in. This module reads the per-candidate form; ``columnar_candidates`` the columnar one into the
same columns, and ``columns_of`` picks the reader for a request.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import attrgetter
from types import MappingProxyType
from typing import Any, Generic, TypeVar

import numpy as np

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.core.batch import Batch

T = TypeVar("T")


class Once(Generic[T]):
    """``functools.cached_property`` without its lock (on Python 3.11 each first read of a column took an RLock,
    ~28 a call): the value goes into the instance's ``__dict__``, which shadows this non-data descriptor (one
    call's columns are read by one thread)."""

    def __init__(self, read: Callable[[Any], T]) -> None:
        self.read, self.name = read, read.__name__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> T:
        if obj is None:
            return self  # type: ignore[return-value]  # read on the class: the descriptor
        value = obj.__dict__[self.name] = self.read(obj)
        return value


TIME_FIELDS = ("created_at", "last_accessed_at", "event_time", "ingested_at", "valid_from", "valid_to")
_NO_METADATA: Mapping[str, str] = MappingProxyType({})


def nans(shape: int | tuple[int, int]) -> np.ndarray:
    """A float64 array of NaN (``np.full`` is a Python-level ``empty`` and ``copyto``: a few times the cost)."""
    out = np.empty(shape)
    out.fill(np.nan)
    return out


@dataclass(frozen=True)
class OptionalColumn:
    """An optional scalar field of every candidate: which rows set it, and the values of those rows, in order."""

    present: np.ndarray  # bool (n,)
    values: np.ndarray  # (present.sum(),), the field's own dtype (int64 positions compare exactly)

    def spread(self) -> np.ndarray:
        """Float64 (n,): the values where set, NaN elsewhere."""
        out = nans(len(self.present))
        if len(self.values):  # most requests set no position, no reranker_score: no masked write
            out[self.present] = self.values
        return out


@dataclass(frozen=True)
class TimeColumn:
    """One Timestamp field of every candidate: presence, seconds and nanos (0 where unset)."""

    present: np.ndarray  # bool (n,)
    seconds: np.ndarray  # int64 (n,)
    nanos: np.ndarray  # int64 (n,)


@dataclass(frozen=True)
class ScoreColumn:
    """One key of a map<string, double> field across the candidates: where it is set, its values (NaN elsewhere)."""

    present: np.ndarray  # bool (n,)
    values: np.ndarray  # float64 (n,)


@dataclass(frozen=True)
class Paths:
    """How a violation names candidate ``i``'s field in the form the candidates came in."""

    at: str  # candidate i as a whole: "candidates[{}]", "columns.ids[{}]" or "candidate" (ScoreAdmission's one)
    columnar: bool = False

    def row(self, i: int) -> str:
        return self.at.format(i)

    def field(self, i: int, name: str) -> str:
        """``candidates[3].retrieval_score``, ``columns.retrieval_scores[3]``, ``candidate.retrieval_score``."""
        return f"columns.{COLUMN_NAMES.get(name, name)}[{i}]" if self.columnar else f"{self.row(i)}.{name}"

    def key(self, i: int, name: str, key: str) -> str:
        """A map entry: ``candidates[3].facet_scores["bm25"]``, ``columns.facet_scores[3]["bm25"]``."""
        return f'{self.field(i, name)}["{key}"]'


# Candidate field -> its column in CandidateColumns (the message) where the names differ: the plural.
COLUMN_NAMES = {f.name: f.name + "s" for f in pb.Candidate.DESCRIPTOR.fields
                if f.name + "s" in pb.CandidateColumns.DESCRIPTOR.fields_by_name}
PER_CANDIDATE, COLUMNAR = Paths("candidates[{}]"), Paths("columns.ids[{}]", columnar=True)


def _field(name: str) -> Once[list[Any]]:
    """A scalar Candidate field of every candidate, in order (``attrgetter`` over the wrappers: no Python frame
    per candidate)."""
    def read(self: CandidateColumns) -> list[Any]:
        return list(map(attrgetter(name), self.cands))
    return Once(read)


def _optional(name: str, dtype: type) -> Once[OptionalColumn]:
    """An optional scalar Candidate field: one presence pass, then the values of the rows that set it."""
    def read(self: CandidateColumns) -> OptionalColumn:
        present = [name in c for c in self.cands]
        values = list(map(attrgetter(name), compress(self.cands, present)))
        return OptionalColumn(np.array(present, dtype=bool), np.array(values, dtype=dtype))
    return Once(read)


class CandidateColumns:
    """The per-candidate form (``RankRequest.candidates``) as columns: each field by one pass over the candidate
    wrappers; optional fields by one presence pass, their values only where set; maps only where any is set."""

    def __init__(self, cands: Sequence[pb.Candidate], packed: bytes | memoryview = b"", dim: int = 0,
                 paths: Paths = PER_CANDIDATE) -> None:
        self.cands = list(cands)  # one wrapper per candidate, reused by every column
        self.n = len(self.cands)
        self.packed = packed  # RankRequest.embeddings_f32 (read once: upb copies bytes on every access)
        self.dim = dim
        self.paths = paths

    ids, layers, kinds, contents = _field("id"), _field("layer"), _field("kind"), _field("content")
    provenance, threads, speakers = _field("provenance"), _field("thread"), _field("speaker")
    access_count, token_count = _field("access_count"), _field("token_count")
    source, safety, retrieval_scores = _field("source"), _field("safety"), _field("retrieval_score")
    importance, reranker = _optional("importance", np.float64), _optional("reranker_score", np.float64)
    position = _optional("position", np.int64)

    @Once
    def retrieval(self) -> np.ndarray:
        return np.array(self.retrieval_scores, dtype=np.float64)

    @Once
    def times(self) -> dict[str, TimeColumn | None]:
        """Every Timestamp field; None for a field no candidate sets."""
        return {name: self._time(name) for name in TIME_FIELDS}

    def _time(self, name: str) -> TimeColumn | None:
        present = [name in c for c in self.cands]
        if not any(present):
            return None
        # Only set stamps are read (a wrapper per read); then two flat int lists (numpy converts a list of
        # ints much faster than a list of pairs).
        stamps = list(map(attrgetter(name), compress(self.cands, present)))
        mask = np.array(present, dtype=bool)
        seconds = np.zeros(self.n, dtype=np.int64)
        nanos = np.zeros(self.n, dtype=np.int64)
        seconds[mask] = [t.seconds for t in stamps]
        nanos[mask] = [t.nanos for t in stamps]
        return TimeColumn(mask, seconds, nanos)

    @Once
    def facets(self) -> dict[str, ScoreColumn]:
        return self._scores("facet_scores")

    @Once
    def stages(self) -> dict[str, ScoreColumn]:
        return self._scores("stage_scores")

    def _scores(self, name: str) -> dict[str, ScoreColumn]:
        """A map<string, double> field, one column per name set by any candidate (sorted)."""
        rows = [(i, dict(m)) for i, c in enumerate(self.cands) if len(m := getattr(c, name))]
        columns = {key: ScoreColumn(np.zeros(self.n, dtype=bool), nans(self.n))
                   for key in sorted({k for _, m in rows for k in m})}
        for i, m in rows:
            for k, v in m.items():
                columns[k].present[i] = True
                columns[k].values[i] = v
        return columns

    @Once
    def metadata(self) -> list[tuple[int, dict[str, str]]]:
        """(row, Candidate.metadata) of the candidates that have any."""
        return [(i, dict(c.metadata)) for i, c in enumerate(self.cands) if len(c.metadata)]

    @Once
    def embedding_lengths(self) -> list[int]:
        return [len(c.embedding) for c in self.cands]

    @Once
    def embeddings(self) -> np.ndarray | None:
        """Float32 (n, dim): the packed matrix viewed in place, else the candidates' embeddings (zero rows
        where one is missing), or None when no candidate has one."""
        if self.packed:
            return np.frombuffer(self.packed, dtype="<f4").reshape(self.n, self.dim)
        return self.row_embeddings

    def nonfinite_embeddings(self, limit: int) -> list[int]:
        """The rows whose own embedding (Candidate.embedding, at most ``limit`` values) holds NaN or infinity."""
        lengths = self.embedding_lengths
        if len(set(lengths)) == 1 and self.row_embeddings is not None:  # one dimension: the matrix, at once
            if lengths[0] > limit:
                return []
            return np.flatnonzero(~np.isfinite(self.row_embeddings).all(axis=1)).tolist()
        return [i for i, c in enumerate(self.cands)
                if 0 < lengths[i] <= limit and not np.isfinite(np.asarray(c.embedding, dtype=np.float64)).all()]

    @Once
    def row_embeddings(self) -> np.ndarray | None:
        """The candidates' own embeddings (packed ones aside) as ``embeddings`` describes them."""
        lengths = self.embedding_lengths
        dim = max(lengths, default=0)
        if dim == 0:
            return None
        if min(lengths) == dim:
            # numpy reads each repeated-float container in C: no per-value Python work.
            return np.array([c.embedding for c in self.cands], dtype=np.float32)
        out = np.zeros((self.n, dim), dtype=np.float32)
        for i, c in enumerate(self.cands):
            if lengths[i] == dim:
                out[i] = c.embedding
        return out

    def to_batch(self) -> Batch:
        """The columns as a core Batch (equal to batch_from_rows of the rows, one per candidate)."""
        metadata: list[Mapping[str, str]] = [_NO_METADATA] * self.n
        for i, entries in self.metadata:
            metadata[i] = MappingProxyType(entries)
        unset = nans(self.n)  # every time no candidate sets is this one column (read-only in the batch)
        # A set time is ``seconds + nanos / 1e9``, as ``convert.ts_to_seconds``; an unset one NaN.
        times = {name: unset if t is None else np.where(t.present, t.seconds + t.nanos / 1e9, np.nan)
                 for name, t in self.times.items()}
        return Batch(
            ids=tuple(self.ids),
            layers=tuple(self.layers),
            kinds=tuple(self.kinds),
            contents=tuple(self.contents),
            retrieval=self.retrieval,
            facets=MappingProxyType({k: c.values for k, c in self.facets.items()}),
            importance=self.importance.spread(),
            access_count=np.array(self.access_count, dtype=np.int64),
            token_count=np.array(self.token_count, dtype=np.int64),
            source=np.array(self.source, dtype=np.int8),
            provenance=tuple(self.provenance),
            safety=np.array(self.safety, dtype=np.int8),
            embeddings=self.embeddings,
            stage_scores=MappingProxyType({k: c.values for k, c in self.stages.items()}),
            metadata=tuple(metadata),
            threads=tuple(self.threads),
            positions=self.position.spread(),
            speakers=tuple(self.speakers),
            reranker=self.reranker.spread() if len(self.reranker.values) else None,
            **times,
        )
