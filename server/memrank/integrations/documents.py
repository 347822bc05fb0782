"""What an adapter hands the mapping (``Item`` s read through ``MetadataKeys``) and what the mapping raises
(``MappingError``, naming the document and the key)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

ScoreMode = Literal["auto", "unit", "minmax", "order"]
SCORE_MODES: tuple[str, ...] = ("auto", "unit", "minmax", "order")


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
    # A reranker's score (any finite number, any scale), where LangChain's rerank compressors (Cohere, Jina,
    # Flashrank, ...) leave it; read when the framework carries none of its own (``Item.reranker``).
    reranker_score: str | None = "relevance_score"
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
    reranker: Any = None  # a reranker's score the framework carries outside metadata (``reranked=True``)


def doc_name(i: int, ident: str | None) -> str:
    """How errors name document i: "document 3 (id 't3')"."""
    return f"document {i}" + (f" (id {ident!r})" if ident else "")


def key_name(key: str) -> str:
    """How errors name a metadata key: "metadata['importance']"."""
    return f"metadata[{key!r}]"
