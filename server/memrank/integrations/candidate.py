"""One document's metadata as a candidate: each row of ``mapping``'s table read, checked and set (the value
readers are ``values``'). A candidate is a dict of Candidate field names, in the values the client's
``memrank.client.requests.put_columns`` reads (times as datetimes, enums as numbers, the embedding a float32
array), so a batch goes out as ``RankRequest.columns`` with no message per candidate."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.integrations.documents import Item, MappingError, MetadataKeys, key_name
from memrank.integrations.values import as_embedding, enum_names, enum_value, integer, real, timestamp

MAX_POSITION = 2**53
MAX_UINT32 = 2**32 - 1
TIME_FIELDS = ("created_at", "last_accessed_at", "event_time", "ingested_at", "valid_from", "valid_to")
STRING_FIELDS = ("kind", "layer", "speaker", "provenance")
COUNT_FIELDS = ("token_count", "access_count")

Read = Callable[[Any], Any]  # a metadata value -> the candidate's value, or None when it is not one


def _importance(value: Any) -> float | None:
    number = real(value)
    return number if number is not None and 0.0 <= number <= 1.0 else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _thread(value: Any) -> str | None:
    return None if isinstance(value, bool) or not isinstance(value, str | int) else str(value)


def _integer_to(top: int) -> Read:
    def read(value: Any) -> int | None:
        number = integer(value)
        return number if number is not None and 0 <= number <= top else None
    return read


def _enum(enum: Any, prefix: str) -> tuple[Read, str]:
    return (lambda value: enum_value(value, enum, prefix)), f"one of {enum_names(enum, prefix)} (or its number)"


_SOURCE, _SOURCES = _enum(pb.Source, "SOURCE_")
_SAFETY, _SAFETIES = _enum(pb.SafetyStatus, "SAFETY_STATUS_")
_TIME = "a timestamp must be a datetime, a date, epoch seconds or an ISO-8601 string"

# The table's rows read from metadata, in the order they are checked: (field, reader, what a value must be).
RULES: tuple[tuple[str, Read, str], ...] = (
    *((f, timestamp, _TIME) for f in TIME_FIELDS),
    ("importance", _importance, "importance must be a number in [0, 1]"),
    *((f, _text, f"{f} must be a string") for f in STRING_FIELDS),
    ("thread", _thread, "thread must be a string or an integer"),
    ("position", _integer_to(MAX_POSITION), "position must be an integer in [0, 2^53]"),
    *((f, _integer_to(MAX_UINT32), f"{f} must be an integer in [0, 2^32 - 1]") for f in COUNT_FIELDS),
    ("source", _SOURCE, f"source must be {_SOURCES}"),
    ("safety", _SAFETY, f"safety must be {_SAFETIES}"),
)


class CandidateReader:
    """Documents as candidates through one MetadataKeys (the rules whose key is set, worked out once a batch)."""

    def __init__(self, keys: MetadataKeys) -> None:
        self.keys = keys
        self.rules = [(fname, key, read, want, fname in keys.required) for fname, read, want in RULES
                      if (key := getattr(keys, fname)) is not None]

    def candidate(self, name: str, ident: str, item: Item, score: float,
                  reranker_field: str = "reranker score") -> dict[str, Any]:
        """The candidate of one document (``name`` as errors name it, ``ident`` its id, ``score`` its
        retrieval_score; ``reranker_field`` names ``item.reranker`` in errors)."""
        c: dict[str, Any] = {"id": ident, "content": item.content or "", "retrieval_score": score}
        meta = item.metadata
        for fname, key, read, want, required in self.rules:
            value = meta.get(key)
            if value is None:
                if required:
                    raise MappingError(name, key_name(key), f"absent, and MetadataKeys.required lists {fname!r}")
                continue
            got = read(value)
            if got is None:
                raise MappingError(name, key_name(key), f"{want}, got {value!r}")
            c[fname] = got
        self._reranker(name, item, c, reranker_field)
        return self._embedding(name, item, c)

    def _reranker(self, name: str, item: Item, c: dict[str, Any], field: str) -> None:
        """reranker_score: the framework's own reranker score, else ``metadata[keys.reranker_score]``."""
        value, where = item.reranker, field
        if value is None and self.keys.reranker_score is not None:
            value, where = item.metadata.get(self.keys.reranker_score), key_name(self.keys.reranker_score)
        if value is None:
            if "reranker_score" in self.keys.required:
                raise MappingError(name, where, "absent, and MetadataKeys.required lists 'reranker_score'")
            return
        number = real(value)
        if number is None:
            raise MappingError(name, where, f"a reranker score must be a finite number, got {value!r}")
        c["reranker_score"] = number

    def _embedding(self, name: str, item: Item, c: dict[str, Any]) -> dict[str, Any]:
        keys, meta = self.keys, item.metadata
        embedding: Any = item.embedding
        where = "embedding"
        if embedding is None and keys.embedding is not None:
            embedding, where = meta.get(keys.embedding), key_name(keys.embedding)
        if embedding is not None:
            vector = as_embedding(embedding)
            if vector is None:
                raise MappingError(name, where, "an embedding must be a non-empty sequence of finite numbers "
                                                f"(finite as float32 too), got {type(embedding).__name__}")
            c["embedding"] = vector
        elif "embedding" in keys.required:
            raise MappingError(name, where, "absent, and MetadataKeys.required lists 'embedding'")
        return c
