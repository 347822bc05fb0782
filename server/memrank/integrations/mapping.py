"""The one mapping from a framework's documents to memrank candidates, shared by every adapter.

Past 250 lines on purpose: the table below is the mapping's documentation, and the code reading each of its rows
stays beside it (the value readers are ``values``').

Each adapter (``memrank.integrations.langchain``, ``.llamaindex``, ``.haystack``)
turns its documents into :class:`Item` s and calls :func:`build_request`; the
response goes back through :func:`selections`. What is read, from where:

==================  =========================================================  ===================================
Candidate field     read from                                                  when absent (or None)
==================  =========================================================  ===================================
id                  the framework's id (LangChain ``Document.id``, LlamaIndex  ``#<index>``, the document's 0-based
                    ``node_id``, Haystack ``Document.id``), else               place in the batch
                    ``metadata[keys.id]`` (a string or an integer)
retrieval_score     the retriever's score (LangChain ``metadata[keys.score]``,  see :func:`retrieval_scores`
                    LlamaIndex ``NodeWithScore.score``, Haystack
                    ``Document.score``), normalised as ``scores`` says
content             the text (LangChain ``page_content``, LlamaIndex            ``""``
                    ``get_content()``, Haystack ``content``)
created_at ...      ``metadata[keys.created_at]`` etc., the six timestamps:    unset (the server's default)
valid_to            a datetime (naive = UTC), a date (midnight UTC), epoch
                    seconds, or an ISO-8601 string
importance          ``metadata[keys.importance]``: a number in [0, 1]          unset: derived from the content
kind, layer,        strings                                                    unset
speaker,
provenance
thread              a string or an integer                                     unset
position            an integer in [0, 2^53]                                    unset
token_count,        an integer >= 0                                            unset (token_count: estimated)
access_count
source, safety      an enum name (``"user_provided"``, ``"SOURCE_CHAT"``, any  unset (SOURCE_UNKNOWN, SAFE)
                    case) or its number
embedding           the framework's embedding (LlamaIndex ``node.embedding``,  unset
                    Haystack ``Document.embedding``), else
                    ``metadata[keys.embedding]``: finite numbers, one
                    dimension for the batch
==================  =========================================================  ===================================

Integers and numbers may also come as strings ("3", "0.7"); a float that is an
integer (3.0) counts as an integer. Any other metadata is not sent. A value of
the wrong type or out of range raises :class:`MappingError` naming the
document and the key; a key listed in ``MetadataKeys.required`` that is absent
raises it too. A key set to None in :class:`MetadataKeys` is not read.

The selected documents come back in placement order (the order of
``RankResponse.selected``), each carrying :func:`explanation` under
``metadata[keys.output]`` (default ``"memrank"``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from google.protobuf import json_format  # type: ignore[import-untyped]

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.integrations.values import as_embedding, enum_names, enum_value, integer, real, timestamp

ScoreMode = Literal["auto", "unit", "minmax", "order"]
SCORE_MODES: tuple[str, ...] = ("auto", "unit", "minmax", "order")
MAX_POSITION = 2**53
MAX_UINT32 = 2**32 - 1
TIME_FIELDS = ("created_at", "last_accessed_at", "event_time", "ingested_at", "valid_from", "valid_to")
STRING_FIELDS = ("kind", "layer", "speaker", "provenance")
COUNT_FIELDS = ("token_count", "access_count")


class MappingError(ValueError):
    """A document whose metadata cannot be sent: names the document and the key."""

    def __init__(self, document: str, key: str, problem: str) -> None:
        self.document = document
        self.key = key
        self.problem = problem
        super().__init__(f"{document}: {key}: {problem}")


@dataclass(frozen=True)
class MetadataKeys:
    """Where each candidate field is read from in a document's metadata (None: not read)."""

    id: str | None = "id"
    score: str | None = "score"  # LangChain only: the other frameworks carry a score of their own
    created_at: str | None = "created_at"
    last_accessed_at: str | None = "last_accessed_at"
    event_time: str | None = "event_time"
    ingested_at: str | None = "ingested_at"
    valid_from: str | None = "valid_from"
    valid_to: str | None = "valid_to"
    importance: str | None = "importance"
    access_count: str | None = "access_count"
    kind: str | None = "kind"
    # Not "source": LangChain's loaders put a file path or URL there.
    source: str | None = "memory_source"
    provenance: str | None = "provenance"
    safety: str | None = "safety"
    layer: str | None = "layer"
    token_count: str | None = "token_count"
    thread: str | None = "thread"
    position: str | None = "position"
    speaker: str | None = "speaker"
    embedding: str | None = "embedding"
    # Fields (by their names above) a document must carry: absent is a MappingError, not a default.
    required: tuple[str, ...] = ()
    # Where the selected documents get their explanation.
    output: str = "memrank"

    def __post_init__(self) -> None:
        names = {f.name for f in fields(self)} - {"required", "output"}
        unknown = sorted(set(self.required) - names)
        if unknown:
            raise ValueError(f"MetadataKeys.required names unknown fields {unknown}; known: {sorted(names)}")
        off = [r for r in self.required if getattr(self, r) is None]
        if off:
            raise ValueError(f"MetadataKeys.required names fields whose key is None: {off}")
        if not self.output:
            raise ValueError("MetadataKeys.output must be a non-empty key")

    def as_dict(self) -> dict[str, Any]:
        """The keys as a plain dict (for serialisation); ``MetadataKeys(**d)`` restores them."""
        return {f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v) for f in fields(self)}

    @classmethod
    def of(cls, value: MetadataKeys | Mapping[str, Any] | None) -> MetadataKeys:
        """Keys from keys, a dict of overrides, or None (the defaults)."""
        if value is None:
            return cls()
        if isinstance(value, MetadataKeys):
            return value
        data = dict(value)
        if "required" in data:
            data["required"] = tuple(data["required"])
        return cls(**data)


@dataclass(frozen=True)
class Item:
    """One framework document, as the adapter found it (values unchecked)."""

    content: str | None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None  # the framework's own id, when it has one
    score: Any = None  # the retriever's score, when the framework carries one outside metadata
    embedding: Any = None  # the framework's own embedding field


@dataclass(frozen=True)
class Selection:
    """A selected document: its index in the input and its explanation."""

    index: int
    score: float
    explanation: dict[str, Any]


def _name(i: int, ident: str | None) -> str:
    return f"document {i}" + (f" (id {ident!r})" if ident else "")


def _key(key: str) -> str:
    return f"metadata[{key!r}]"


def document_id(i: int, item: Item, keys: MetadataKeys) -> str:
    """The id a document is sent under (see the module's table)."""
    if item.id:
        return str(item.id)
    if keys.id is not None and item.metadata.get(keys.id) is not None:
        value = item.metadata[keys.id]
        if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
            raise MappingError(_name(i, None), _key(keys.id), f"an id must be a non-empty string or an integer, "
                                                               f"got {value!r}")
        return str(value)
    return f"#{i}"


def retrieval_scores(items: Sequence[Item], mode: str, score_field: str,
                     names: Sequence[str]) -> tuple[list[float], bool]:
    """Each document's retrieval_score, and whether the scores are relative to the batch.

    - ``"unit"``: the retriever's scores as they are; each must be a number in [0, 1].
    - ``"minmax"``: ``(s - min) / (max - min)`` within the batch (every score 1.0 when all are equal).
    - ``"order"``: scores ignored; the i-th of n documents (0-based) gets ``(n - i) / n``.
    - ``"auto"`` (the default): ``"order"`` when no document carries a score; otherwise every
      document must carry one, and ``"unit"`` applies when all lie in [0, 1], ``"minmax"`` when
      any does not (BM25 and other unbounded scores).

    Relative scores (``"minmax"``, ``"order"``) make the request's ``relevance_threshold`` 0
    unless the caller sets one: an absolute floor means nothing on them.
    """
    if mode not in SCORE_MODES:
        raise ValueError(f"scores must be one of {list(SCORE_MODES)}, got {mode!r}")
    n = len(items)
    if mode == "auto" and all(it.score is None for it in items):
        mode = "order"
    if mode == "order":
        return [(n - i) / n for i in range(n)], True
    values: list[float] = []
    for i, it in enumerate(items):
        if it.score is None:
            raise MappingError(names[i], score_field, f"no score, while scores={mode!r} needs one on every document"
                               + (" (the others carry one)" if mode == "auto" else ""))
        value = real(it.score)
        if value is None:
            raise MappingError(names[i], score_field, f"a score must be a finite number, got {it.score!r}")
        if mode == "unit" and not 0.0 <= value <= 1.0:
            raise MappingError(names[i], score_field, f"{value!r} is outside [0, 1] (scores='unit'); "
                                                      "use scores='minmax' for unbounded scores")
        values.append(value)
    if mode == "auto":
        mode = "unit" if all(0.0 <= v <= 1.0 for v in values) else "minmax"
    if mode == "unit":
        return values, False
    lo, hi = min(values), max(values)
    return ([1.0] * n if hi == lo else [(v - lo) / (hi - lo) for v in values]), True


def _candidate(name: str, ident: str, item: Item, keys: MetadataKeys, score: float) -> pb.Candidate:
    c = pb.Candidate(id=ident, content=item.content or "", retrieval_score=score)
    meta = item.metadata

    def read(fname: str) -> tuple[str, Any] | None:
        key = getattr(keys, fname)
        if key is None or meta.get(key) is None:
            if fname in keys.required:
                raise MappingError(name, _key(key), f"absent, and MetadataKeys.required lists {fname!r}")
            return None
        return key, meta[key]

    def bad(key: str, value: Any, want: str) -> MappingError:
        return MappingError(name, _key(key), f"{want}, got {value!r}")

    for fname in TIME_FIELDS:
        if (got := read(fname)) is not None:
            ts = timestamp(got[1])
            if ts is None:
                raise bad(*got, "a timestamp must be a datetime, a date, epoch seconds or an ISO-8601 string")
            getattr(c, fname).CopyFrom(ts)
    if (got := read("importance")) is not None:
        value = real(got[1])
        if value is None or not 0.0 <= value <= 1.0:
            raise bad(*got, "importance must be a number in [0, 1]")
        c.importance = value
    for fname in STRING_FIELDS:
        if (got := read(fname)) is not None:
            if not isinstance(got[1], str):
                raise bad(*got, f"{fname} must be a string")
            setattr(c, fname, got[1])
    if (got := read("thread")) is not None:
        if isinstance(got[1], bool) or not isinstance(got[1], str | int):
            raise bad(*got, "thread must be a string or an integer")
        c.thread = str(got[1])
    if (got := read("position")) is not None:
        number = integer(got[1])
        if number is None or not 0 <= number <= MAX_POSITION:
            raise bad(*got, "position must be an integer in [0, 2^53]")
        c.position = number
    for fname in COUNT_FIELDS:
        if (got := read(fname)) is not None:
            number = integer(got[1])
            if number is None or not 0 <= number <= MAX_UINT32:
                raise bad(*got, f"{fname} must be an integer in [0, 2^32 - 1]")
            setattr(c, fname, number)
    if (got := read("source")) is not None:
        number = enum_value(got[1], pb.Source, "SOURCE_")
        if number is None:
            raise bad(*got, f"source must be one of {enum_names(pb.Source, 'SOURCE_')} (or its number)")
        c.source = number  # type: ignore[assignment]
    if (got := read("safety")) is not None:
        number = enum_value(got[1], pb.SafetyStatus, "SAFETY_STATUS_")
        if number is None:
            raise bad(*got, f"safety must be one of {enum_names(pb.SafetyStatus, 'SAFETY_STATUS_')} (or its number)")
        c.safety = number  # type: ignore[assignment]
    embedding: Any = item.embedding
    where = "embedding"
    if embedding is None and keys.embedding is not None:
        embedding, where = meta.get(keys.embedding), _key(keys.embedding)
    if embedding is not None:
        vector = as_embedding(embedding)
        if vector is None:
            raise MappingError(name, where, f"an embedding must be a non-empty sequence of finite numbers, "
                                            f"got {type(embedding).__name__}")
        c.embedding.extend(vector)
    elif "embedding" in keys.required:
        raise MappingError(name, where, "absent, and MetadataKeys.required lists 'embedding'")
    return c


def build_request(query: str | None, items: Sequence[Item], *, keys: MetadataKeys | None = None,
                  scores: str = "auto", score_field: str = "score", top_k: int | None = None,
                  profile: str | None = None, request: Mapping[str, Any] | None = None) -> pb.RankRequest:
    """The RankRequest for a query and a framework's documents.

    ``request`` holds further RankRequest fields in protobuf JSON form (e.g.
    ``{"referenceTime": "2026-06-01T00:00:00Z", "placement": "PLACEMENT_EDGES",
    "budget": {"maxTokens": 2000}}``); it may not set ``query`` or ``candidates``.
    ``top_k`` becomes ``budget.max_items``; ``score_field`` names the score in errors.
    """
    keys = keys or MetadataKeys()
    extra = dict(request or {})
    clash = sorted({"query", "candidates", "embeddingsF32", "embeddings_f32"} & set(extra))
    if clash:
        raise ValueError(f"request may not set {clash}: the adapter fills them from the documents")
    req = pb.RankRequest()
    try:
        json_format.ParseDict(extra, req)
    except json_format.ParseError as err:
        raise ValueError(f"request is not a RankRequest in protobuf JSON form: {err}") from None
    if query:
        req.query = query
    if profile:
        req.profile = profile
    if top_k is not None:
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_UINT32:
            raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
        req.budget.max_items = top_k
    seen: dict[str, int] = {}
    idents: list[str] = []
    for i, it in enumerate(items):
        ident = document_id(i, it, keys)
        if ident in seen:
            raise MappingError(_name(i, ident), "id", f"the same id as document {seen[ident]}: ids must be unique "
                                                      "(deduplicate before ranking)")
        seen[ident] = i
        idents.append(ident)
    names = [_name(i, ident) for i, ident in enumerate(idents)]
    values, relative = retrieval_scores(items, scores, score_field, names)
    first_dim: tuple[int, int] | None = None  # (document, dimension) of the first embedding
    for i, it in enumerate(items):
        c = _candidate(names[i], idents[i], it, keys, values[i])
        if len(c.embedding):
            if first_dim is None:
                first_dim = (i, len(c.embedding))
            elif len(c.embedding) != first_dim[1]:
                raise MappingError(names[i], "embedding", f"{len(c.embedding)} dimensions, while "
                                                          f"{names[first_dim[0]]} has {first_dim[1]}: "
                                                          "one dimension per batch")
        req.candidates.append(c)
    if relative and not req.HasField("relevance_threshold"):
        req.relevance_threshold = 0.0
    return req


def document_name(request: pb.RankRequest, index: int) -> str:
    """How errors name the document sent as ``request.candidates[index]``."""
    return _name(index, request.candidates[index].id)


def explanation(m: pb.RankedMemory, response: pb.RankResponse) -> dict[str, Any]:
    """A selected memory's rank, score, breakdown and reasons as plain (JSON-ready) values."""
    b = m.breakdown
    out: dict[str, Any] = {
        "id": m.id, "rank": m.rank, "position": m.position, "score": m.score, "layer": m.layer,
        "profile": response.profile,
    }
    if m.HasField("breakdown"):
        out.update({
            "retrieval_score": b.retrieval_score, "combined_score": b.combined_score, "final_score": b.final_score,
            "quality_score": b.quality_score, "blend_term": b.blend_term, "marginal_gain": b.marginal_gain,
            "token_count": b.token_count, "token_count_estimated": b.token_count_estimated,
            "reasons": list(b.reasons),
            "signals": {s.name: {"raw": s.raw, "normalized": s.normalized, "weight": s.weight,
                                 "contribution": s.contribution, "reasons": list(s.reasons)} for s in b.signals},
        })
    out["stages"] = [{"stage": s.stage, "objective": s.objective, "provenance": s.provenance,
                      "input_score": s.input_score, "output_score": s.output_score, "position": s.position}
                     for s in m.stages]
    out["receipt"] = response.receipt.digest
    return out


def selections(request: pb.RankRequest, response: pb.RankResponse) -> list[Selection]:
    """The selected documents, in placement order, as indices into the request's candidates."""
    at = {c.id: i for i, c in enumerate(request.candidates)}
    return [Selection(at[m.id], m.score, explanation(m, response)) for m in response.selected]
