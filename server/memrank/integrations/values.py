"""Metadata values as the wire wants them, read leniently: each reader returns None for a value not of its kind
(``mapping`` then raises ``MappingError`` naming the document and the key)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from datetime import UTC, date, datetime, time
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp  # type: ignore[import-untyped]


def real(value: Any) -> float | None:
    """A finite real number from a number or a numeric string, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, int | float) or hasattr(value, "__float__"):
        try:
            out = float(value)
        except (TypeError, ValueError):
            return None
        return out if math.isfinite(out) else None
    return None


def integer(value: Any) -> int | None:
    """An integer from an int, an integral float or an integer string, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    number = real(value)
    if number is not None and number.is_integer():
        return int(number)
    return None


def timestamp(value: Any) -> Timestamp | None:
    """A Timestamp from a datetime, a date, epoch seconds or an ISO-8601 string, else None."""
    if isinstance(value, str):
        with contextlib.suppress(ValueError):  # else perhaps epoch seconds as a string
            value = datetime.fromisoformat(value.strip())
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
    elif isinstance(value, date):
        value = datetime.combine(value, time(), tzinfo=UTC)
    else:
        seconds = real(value)
        if seconds is None:
            return None
        try:
            value = datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    ts = Timestamp()
    ts.FromDatetime(value.astimezone(UTC))
    return ts


def enum_value(value: Any, enum: Any, prefix: str) -> int | None:
    """An enum number from its name (any case, prefix optional) or its number, else None."""
    if isinstance(value, str):
        name = value.strip().upper().replace("-", "_").replace(" ", "_")
        name = name if name.startswith(prefix) else prefix + name
        known = enum.DESCRIPTOR.values_by_name
        return int(known[name].number) if name in known else None
    number = integer(value)
    return number if number is not None and number in enum.DESCRIPTOR.values_by_number else None


def enum_names(enum: Any, prefix: str) -> str:
    names = enum.DESCRIPTOR.values_by_name
    return ", ".join(n.removeprefix(prefix).lower() for n in names if not n.endswith("UNSPECIFIED"))


def as_embedding(value: Any) -> list[float] | None:
    """Finite floats from a sequence (or an array with tolist()), else None."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, str | bytes) or not isinstance(value, Sequence) or not value:
        return None
    out = [real(v) for v in value]
    if any(v is None or isinstance(raw, str) for v, raw in zip(out, value, strict=True)):
        return None
    return [float(v) for v in out if v is not None]
