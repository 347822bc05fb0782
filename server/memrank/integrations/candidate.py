"""One document's metadata as a candidate: each row of ``mapping``'s table read, checked and set (the value
readers are ``values``'). A candidate is a dict of Candidate field names, in the values the client's
``memrank.client.requests.put_columns`` reads (times as datetimes, enums as numbers, the embedding a float32
array), so a batch goes out as ``RankRequest.columns`` with no message per candidate."""

from __future__ import annotations

from typing import Any

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.integrations.documents import Item, MappingError, MetadataKeys, key_name
from memrank.integrations.values import as_embedding, enum_names, enum_value, integer, real, timestamp

MAX_POSITION = 2**53
MAX_UINT32 = 2**32 - 1
TIME_FIELDS = ("created_at", "last_accessed_at", "event_time", "ingested_at", "valid_from", "valid_to")
STRING_FIELDS = ("kind", "layer", "speaker", "provenance")
COUNT_FIELDS = ("token_count", "access_count")


def candidate(name: str, ident: str, item: Item, keys: MetadataKeys, score: float) -> dict[str, Any]:
    """The candidate of one document (``name`` as errors name it, ``ident`` its id, ``score`` its retrieval_score)."""
    c: dict[str, Any] = {"id": ident, "content": item.content or "", "retrieval_score": score}
    meta = item.metadata

    def read(fname: str) -> tuple[str, Any] | None:
        key = getattr(keys, fname)
        if key is None or meta.get(key) is None:
            if fname in keys.required:
                raise MappingError(name, key_name(key), f"absent, and MetadataKeys.required lists {fname!r}")
            return None
        return key, meta[key]

    def bad(key: str, value: Any, want: str) -> MappingError:
        return MappingError(name, key_name(key), f"{want}, got {value!r}")

    for fname in TIME_FIELDS:
        if (got := read(fname)) is not None:
            ts = timestamp(got[1])
            if ts is None:
                raise bad(*got, "a timestamp must be a datetime, a date, epoch seconds or an ISO-8601 string")
            c[fname] = ts
    if (got := read("importance")) is not None:
        value = real(got[1])
        if value is None or not 0.0 <= value <= 1.0:
            raise bad(*got, "importance must be a number in [0, 1]")
        c["importance"] = value
    for fname in STRING_FIELDS:
        if (got := read(fname)) is not None:
            if not isinstance(got[1], str):
                raise bad(*got, f"{fname} must be a string")
            c[fname] = got[1]
    if (got := read("thread")) is not None:
        if isinstance(got[1], bool) or not isinstance(got[1], str | int):
            raise bad(*got, "thread must be a string or an integer")
        c["thread"] = str(got[1])
    if (got := read("position")) is not None:
        number = integer(got[1])
        if number is None or not 0 <= number <= MAX_POSITION:
            raise bad(*got, "position must be an integer in [0, 2^53]")
        c["position"] = number
    for fname in COUNT_FIELDS:
        if (got := read(fname)) is not None:
            number = integer(got[1])
            if number is None or not 0 <= number <= MAX_UINT32:
                raise bad(*got, f"{fname} must be an integer in [0, 2^32 - 1]")
            c[fname] = number
    if (got := read("source")) is not None:
        number = enum_value(got[1], pb.Source, "SOURCE_")
        if number is None:
            raise bad(*got, f"source must be one of {enum_names(pb.Source, 'SOURCE_')} (or its number)")
        c["source"] = number
    if (got := read("safety")) is not None:
        number = enum_value(got[1], pb.SafetyStatus, "SAFETY_STATUS_")
        if number is None:
            raise bad(*got, f"safety must be one of {enum_names(pb.SafetyStatus, 'SAFETY_STATUS_')} (or its number)")
        c["safety"] = number
    embedding: Any = item.embedding
    where = "embedding"
    if embedding is None and keys.embedding is not None:
        embedding, where = meta.get(keys.embedding), key_name(keys.embedding)
    if embedding is not None:
        vector = as_embedding(embedding)
        if vector is None:
            raise MappingError(name, where, "an embedding must be a non-empty sequence of finite numbers (finite as "
                                            f"float32 too), got {type(embedding).__name__}")
        c["embedding"] = vector
    elif "embedding" in keys.required:
        raise MappingError(name, where, "absent, and MetadataKeys.required lists 'embedding'")
    return c
