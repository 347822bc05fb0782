"""Columnar domain model of one ranking request: one numpy column per field.

Times are float64 seconds since the Unix epoch with NaN for "unset"; optional
numbers use NaN for "unset" too. Columns are read-only so signals cannot
mutate their input by accident. The one mutable part of a ``Batch`` is its
``memo`` (``Memo``): values computed from the columns on first use and kept
for the batch's life, each a pure function of the batch and its key, so no
result depends on whether it was computed before.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from types import MappingProxyType
from typing import Any, TypeVar

import numpy as np

from memrank.core.types import ExplainLevel, Placement

_EMPTY_MAP: Mapping[str, str] = MappingProxyType({})
T = TypeVar("T")


class Memo:
    """What signals derive from a batch's columns, computed once per batch: the text indexes
    (``core.text.buffers``), a query's lexical presence matrix, the float64 squared norms, the context match.

    Write-once: a key's value is built by ``get`` (or stored by ``put``) once and never replaced, and each is
    a function of the batch and the key alone, so a memo is never an input, only saved work. It lives as long
    as its batch (one request), but for what is let go once no later stage reads it (``forget``: a later ``get``
    would build the same value again); ``Batch.take`` starts an empty one.
    """

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held: dict[Hashable, Any] = {}

    def get(self, key: Hashable, build: Callable[[], T]) -> T:
        """The value kept under ``key``, built by ``build()`` on first use."""
        held = self._held
        if key not in held:
            held[key] = build()
        value: T = held[key]
        return value

    def forget(self, keys: Iterable[Hashable]) -> None:
        """Let go of the values held under ``keys``."""
        for key in keys:
            self._held.pop(key, None)

    def peek(self, key: Hashable) -> Any:
        """The value kept under ``key``, else None (nothing is built)."""
        return self._held.get(key)

    def put(self, key: Hashable, value: Any) -> None:
        """Keep ``value`` under a key that holds nothing yet."""
        if key in self._held:
            raise KeyError(f"memo key {key!r} is written once")
        self._held[key] = value

    def __contains__(self, key: Hashable) -> bool:
        return key in self._held

    def values(self) -> list[Any]:
        """Everything kept (what a batch holds on to until the response is written)."""
        return list(self._held.values())


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


_ARRAY_COLUMNS = ("retrieval", "importance", "access_count", "token_count", "created_at", "last_accessed_at",
                  "event_time", "ingested_at", "valid_from", "valid_to", "source", "safety", "positions")
_ARRAYS = attrgetter(*_ARRAY_COLUMNS)


@dataclass(frozen=True)
class Batch:
    """The candidates of one request as columns (all of length ``n``)."""

    ids: tuple[str, ...]
    layers: tuple[str, ...]
    kinds: tuple[str, ...]
    contents: tuple[str, ...]
    retrieval: np.ndarray  # float64, caller's retrieval_score
    facets: Mapping[str, np.ndarray]  # facet name -> float64, NaN where the candidate lacks it
    importance: np.ndarray  # float64 in [0, 1], NaN = unset
    access_count: np.ndarray  # int64
    token_count: np.ndarray  # int64, 0 = unset
    created_at: np.ndarray  # float64 epoch seconds, NaN = unset
    last_accessed_at: np.ndarray
    event_time: np.ndarray
    ingested_at: np.ndarray
    valid_from: np.ndarray
    valid_to: np.ndarray
    source: np.ndarray  # int8, values of types.Source
    provenance: tuple[str, ...]
    safety: np.ndarray  # int8, values of types.Safety
    embeddings: np.ndarray | None  # float32 (n, d), None when no candidate has one
    stage_scores: Mapping[str, np.ndarray]  # stage name -> float64, NaN where missing
    metadata: tuple[Mapping[str, str], ...]
    memo: Memo = field(default_factory=Memo, init=False, repr=False, compare=False)  # see Memo: saved work only
    threads: tuple[str, ...]  # "" = no thread (or the empty-named one, for a candidate with a position)
    positions: np.ndarray  # float64 turn index within the thread (integers up to 2^53 are exact), NaN = unset
    speakers: tuple[str, ...]  # "" = unknown
    reranker: np.ndarray | None = None  # float64 caller's reranker_score, NaN = unset; None: no candidate has one

    def __post_init__(self) -> None:
        # One C-level getter for the columns and a method call each (not a getattr and a function call each:
        # a request builds a Batch, and at one candidate this loop was a noticeable share of the conversion).
        for col in (*_ARRAYS(self), *self.facets.values(), *self.stage_scores.values()):
            col.setflags(False)  # write=False, passed by position (cheaper to parse)
        if self.embeddings is not None:
            _frozen(self.embeddings)
        if self.reranker is not None:
            _frozen(self.reranker)

    @property
    def n(self) -> int:
        """Number of candidates."""
        return len(self.ids)

    def take(self, rows: Sequence[int] | np.ndarray) -> Batch:
        """The batch of the given candidates only, in the given order."""
        at = np.asarray(rows, dtype=np.intp)
        picked = list(at.tolist())

        def cut(values: tuple[Any, ...]) -> tuple[Any, ...]:
            return tuple(values[i] for i in picked)

        arrays = {name: getattr(self, name)[at] for name in _ARRAY_COLUMNS}
        return Batch(
            ids=cut(self.ids), layers=cut(self.layers), kinds=cut(self.kinds), contents=cut(self.contents),
            facets={k: v[at] for k, v in self.facets.items()}, provenance=cut(self.provenance),
            embeddings=None if self.embeddings is None else self.embeddings[at],
            stage_scores={k: v[at] for k, v in self.stage_scores.items()}, metadata=cut(self.metadata),
            threads=cut(self.threads), speakers=cut(self.speakers),
            reranker=None if self.reranker is None else self.reranker[at], **arrays,
        )


@dataclass(frozen=True)
class CandidateInput:
    """One candidate as plain Python values (the row form, used to build a Batch)."""

    id: str
    layer: str = ""
    kind: str = ""
    content: str = ""
    retrieval_score: float = 0.0
    facet_scores: Mapping[str, float] = field(default_factory=dict)
    importance: float | None = None
    access_count: int = 0
    token_count: int = 0
    created_at: float | None = None
    last_accessed_at: float | None = None
    event_time: float | None = None
    ingested_at: float | None = None
    valid_from: float | None = None
    valid_to: float | None = None
    source: int = 0
    provenance: str = ""
    safety: int = 0
    embedding: Sequence[float] = ()
    stage_scores: Mapping[str, float] = field(default_factory=dict)
    metadata: Mapping[str, str] = field(default_factory=dict)
    thread: str = ""
    position: int | None = None
    speaker: str = ""
    reranker_score: float | None = None


def _opt(values: Sequence[float | None]) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def _keyed(rows: Sequence[Mapping[str, float]]) -> dict[str, np.ndarray]:
    names = sorted({k for r in rows for k in r})
    return {k: np.array([r.get(k, np.nan) for r in rows], dtype=np.float64) for k in names}


def batch_from_rows(rows: Sequence[CandidateInput]) -> Batch:
    """Build a Batch from row objects (tests, the CLI and the transport use it)."""
    dims = {len(r.embedding) for r in rows if len(r.embedding)}
    embeddings = None
    if dims:
        dim = dims.pop()
        embeddings = np.zeros((len(rows), dim), dtype=np.float32)
        for i, r in enumerate(rows):
            if len(r.embedding):
                embeddings[i] = r.embedding
    return Batch(
        ids=tuple(r.id for r in rows),
        layers=tuple(r.layer for r in rows),
        kinds=tuple(r.kind for r in rows),
        contents=tuple(r.content for r in rows),
        retrieval=np.array([r.retrieval_score for r in rows], dtype=np.float64),
        facets=MappingProxyType(_keyed([r.facet_scores for r in rows])),
        importance=_opt([r.importance for r in rows]),
        access_count=np.array([r.access_count for r in rows], dtype=np.int64),
        token_count=np.array([r.token_count for r in rows], dtype=np.int64),
        created_at=_opt([r.created_at for r in rows]),
        last_accessed_at=_opt([r.last_accessed_at for r in rows]),
        event_time=_opt([r.event_time for r in rows]),
        ingested_at=_opt([r.ingested_at for r in rows]),
        valid_from=_opt([r.valid_from for r in rows]),
        valid_to=_opt([r.valid_to for r in rows]),
        source=np.array([r.source for r in rows], dtype=np.int8),
        provenance=tuple(r.provenance for r in rows),
        safety=np.array([r.safety for r in rows], dtype=np.int8),
        embeddings=embeddings,
        stage_scores=MappingProxyType(_keyed([r.stage_scores for r in rows])),
        metadata=tuple(MappingProxyType(dict(r.metadata)) if r.metadata else _EMPTY_MAP for r in rows),
        threads=tuple(r.thread for r in rows),
        positions=_opt([r.position for r in rows]),
        speakers=tuple(r.speaker for r in rows),
        reranker=_opt([r.reranker_score for r in rows]) if any(r.reranker_score is not None for r in rows)
        else None,
    )


@dataclass(frozen=True)
class LayerSpec:
    """Token allocation policy of one layer."""

    name: str
    share: float = 0.0
    floor_tokens: int = 0
    max_items: int = 0
    min_score: float | None = None


@dataclass(frozen=True)
class RankParams:
    """Request-level inputs of one ranking, besides the candidates."""

    query: str
    reference_time: float  # epoch seconds; the transport fills in the clock when unset
    profile: str = "default"
    layers: tuple[LayerSpec, ...] = ()
    max_tokens: int = 0  # 0 = no token budget
    max_items: int = 0  # 0 = no item limit
    placement: Placement = Placement.UNSPECIFIED
    explicit_lookup: bool = False
    weight_overrides: Mapping[str, float] = field(default_factory=dict)
    min_score: float | None = None
    explain: ExplainLevel = ExplainLevel.UNSPECIFIED
    relevance_threshold: float | None = None  # None: the profile's
    shadow_profile: str = ""
