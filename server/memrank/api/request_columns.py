"""A RankRequest's candidate fields read once, one column at a time, shared by validation and conversion.

Reading a field of a upb message costs a Python-level operation per
candidate, so every field is read by one list comprehension over one list of
candidate wrappers, at most once per request: validation's column fast path
and the proto -> Batch conversion take their columns from the same
``CandidateColumns`` (``validate_rank_request`` returns it and
``request_to_domain`` reuses it). Optional fields cost one presence pass
(``name in message``, protobuf's ``Message.__contains__``: ``HasField`` without
the bound-method call, about half the cost) and values are read only where
set; maps are read only for the candidates that have any; the embedding matrix
is built once (or, packed, viewed in place).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import attrgetter
from types import MappingProxyType
from typing import Any, Generic, TypeVar, overload

import numpy as np

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.core.batch import Batch

TIME_FIELDS = ("created_at", "last_accessed_at", "event_time", "ingested_at", "valid_from", "valid_to")
_NO_METADATA: Mapping[str, str] = MappingProxyType({})
T = TypeVar("T")


class _once(Generic[T]):
    """``functools.cached_property`` without its lock: Python 3.11's takes an RLock on every first read (a few
    thousand instructions a column, most of a column's cost at one candidate). A column is computed once, on
    first read, into the instance's ``__dict__``, which later reads find first (a non-data descriptor)."""

    def __init__(self, fn: Callable[[Any], T]) -> None:
        self.fn = fn
        self.name = fn.__name__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> _once[T]: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...

    def __get__(self, obj: object | None, owner: type | None = None) -> T | _once[T]:
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.fn(obj)
        return value



def _nans(shape: int | tuple[int, int]) -> np.ndarray:
    """A float64 array of NaN (``np.full`` is a Python-level ``empty`` and ``copyto``: a few times the cost)."""
    out = np.empty(shape)
    out.fill(np.nan)
    return out




@dataclass(frozen=True)
class TimeColumn:
    """One Timestamp field of every candidate: presence, seconds and nanos (0 where unset)."""

    present: np.ndarray  # bool (n,)
    seconds: np.ndarray  # int64 (n,)
    nanos: np.ndarray  # int64 (n,)

    def epoch(self) -> np.ndarray:
        """Float64 epoch seconds (``seconds + nanos / 1e9``, as ``ts_to_seconds``), NaN where unset."""
        return np.where(self.present, self.seconds + self.nanos / 1e9, np.nan)


@dataclass(frozen=True)
class MapRow:
    """The map fields of one candidate that has at least one non-empty map."""

    index: int
    facet_scores: dict[str, float]
    stage_scores: dict[str, float]
    metadata: dict[str, str]


class CandidateColumns:
    """The candidates of one request as columns, each read from the protobuf at most once (lazily)."""

    def __init__(self, cands: Sequence[pb.Candidate], packed: bytes = b"", dim: int = 0) -> None:
        self.cands = list(cands)  # one wrapper per candidate, reused by every column
        self.n = len(self.cands)
        self.packed = packed  # RankRequest.embeddings_f32 (read once: upb copies bytes on every access)
        self.dim = dim

    @classmethod
    def of(cls, req: pb.RankRequest) -> CandidateColumns:
        """The columns of a request, its packed embeddings included."""
        return cls(req.candidates, req.embeddings_f32, req.embedding_dim)

    @_once
    def ids(self) -> list[str]:
        return [c.id for c in self.cands]

    @_once
    def layers(self) -> list[str]:
        return [c.layer for c in self.cands]

    @_once
    def kinds(self) -> list[str]:
        return [c.kind for c in self.cands]

    @_once
    def contents(self) -> list[str]:
        return [c.content for c in self.cands]

    @_once
    def provenance(self) -> list[str]:
        return [c.provenance for c in self.cands]

    @_once
    def retrieval(self) -> np.ndarray:
        return np.array([c.retrieval_score for c in self.cands], dtype=np.float64)

    @_once
    def importance_set(self) -> list[bool]:
        return ["importance" in c for c in self.cands]

    @_once
    def importance_values(self) -> np.ndarray:
        """The importance of the candidates that set one, in candidate order."""
        return np.array([c.importance for c in compress(self.cands, self.importance_set)], dtype=np.float64)

    @_once
    def importance(self) -> np.ndarray:
        """Float64 importance, NaN where unset."""
        out = _nans(self.n)
        if len(self.importance_values):
            out[np.array(self.importance_set, dtype=bool)] = self.importance_values
        return out

    @_once
    def threads(self) -> list[str]:
        return [c.thread for c in self.cands]

    @_once
    def speakers(self) -> list[str]:
        return [c.speaker for c in self.cands]

    @_once
    def position_set(self) -> list[bool]:
        return ["position" in c for c in self.cands]

    @_once
    def position_values(self) -> np.ndarray:
        """The int64 position of the candidates that set one, in candidate order (exact, for validation)."""
        return np.array([c.position for c in compress(self.cands, self.position_set)], dtype=np.int64)

    @_once
    def positions(self) -> np.ndarray:
        """Float64 positions, NaN where unset (exact for the valid range, [0, 2^53])."""
        out = _nans(self.n)
        if len(self.position_values):
            out[np.array(self.position_set, dtype=bool)] = self.position_values
        return out

    @_once
    def access_count(self) -> list[int]:
        return [c.access_count for c in self.cands]

    @_once
    def token_count(self) -> list[int]:
        return [c.token_count for c in self.cands]

    @_once
    def source(self) -> list[int]:
        return [c.source for c in self.cands]

    @_once
    def safety(self) -> list[int]:
        return [c.safety for c in self.cands]

    @_once
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

    @_once
    def maps(self) -> list[MapRow]:
        """The map fields of the candidates that have any (most have none: one length test each)."""
        return [MapRow(i, dict(c.facet_scores), dict(c.stage_scores), dict(c.metadata))
                for i, c in enumerate(self.cands) if len(c.facet_scores) or len(c.stage_scores) or len(c.metadata)]

    @_once
    def embedding_lengths(self) -> list[int]:
        return [len(c.embedding) for c in self.cands]

    @_once
    def embeddings(self) -> np.ndarray | None:
        """Float32 (n, dim): the packed matrix viewed in place, else the candidates' embeddings (zero rows
        where one is missing), or None when no candidate has one."""
        if self.packed:
            return np.frombuffer(self.packed, dtype="<f4").reshape(self.n, self.dim)
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

    def _keyed(self, name: str) -> dict[str, np.ndarray]:
        """A map<string, double> field as one float64 column per key (sorted), NaN where a candidate lacks it."""
        if not self.maps:
            return {}
        rows = [(r.index, getattr(r, name)) for r in self.maps]
        rows = [(i, m) for i, m in rows if m]
        columns = {key: _nans(self.n) for key in sorted({k for _, m in rows for k in m})}
        for i, m in rows:
            for k, v in m.items():
                columns[k][i] = v
        return columns

    def to_batch(self) -> Batch:
        """The columns as a core Batch (equal to batch_from_rows of candidate_to_domain)."""
        metadata: list[Mapping[str, str]] = [_NO_METADATA] * self.n
        for r in self.maps:
            if r.metadata:
                metadata[r.index] = MappingProxyType(r.metadata)
        times = {name: (_nans(self.n) if t is None else t.epoch()) for name, t in self.times.items()}
        return Batch(
            ids=tuple(self.ids),
            layers=tuple(self.layers),
            kinds=tuple(self.kinds),
            contents=tuple(self.contents),
            retrieval=self.retrieval,
            facets=MappingProxyType(self._keyed("facet_scores")),
            importance=self.importance,
            access_count=np.array(self.access_count, dtype=np.int64),
            token_count=np.array(self.token_count, dtype=np.int64),
            source=np.array(self.source, dtype=np.int8),
            provenance=tuple(self.provenance),
            safety=np.array(self.safety, dtype=np.int8),
            embeddings=self.embeddings,
            stage_scores=MappingProxyType(self._keyed("stage_scores")),
            metadata=tuple(metadata),
            threads=tuple(self.threads),
            positions=self.positions,
            speakers=tuple(self.speakers),
            **times,
        )
