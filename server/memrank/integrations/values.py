"""Metadata values as the wire wants them, read leniently: each reader returns None for a value not of its kind
(``mapping`` then raises ``MappingError`` naming the document and the key)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from datetime import UTC, date, datetime, time
from typing import Any

import numpy as np


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


def timestamp(value: Any) -> datetime | None:
    """A UTC datetime from a datetime (naive: UTC), a date (midnight UTC), epoch seconds or an ISO-8601 string,
    else None."""
    if isinstance(value, str):
        with contextlib.suppress(ValueError):  # else perhaps epoch seconds as a string
            value = datetime.fromisoformat(value.strip())
    if isinstance(value, datetime):
        return (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).astimezone(UTC)
    if isinstance(value, date):
        return datetime.combine(value, time(), tzinfo=UTC)
    seconds = real(value)
    if seconds is None:
        return None
    try:
        return datetime.fromtimestamp(seconds, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


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


def as_embedding(value: Any) -> np.ndarray | None:
    """The float32 values of a non-empty 1-D sequence or array of numbers (not bools or strings; an object
    with tolist() is read as its list), each finite in float32, else None."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "iuf":  # bools, strings, objects: read as the list of what they hold
            value = value.tolist()
    elif hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | np.ndarray) or not len(value):
        return None
    if not isinstance(value, np.ndarray) and any(issubclass(t, bool | str | bytes) for t in set(map(type, value))):
        return None  # numpy would read True as 1.0 and "0.5" as 0.5
    try:
        if isinstance(value, np.ndarray) and value.dtype == np.float32:
            vector = value
        else:
            with np.errstate(over="ignore"):  # too large for float32: inf, refused below
                vector = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError):  # None, nested sequences, complex numbers, ...
        return None
    return vector if vector.ndim == 1 and bool(np.isfinite(vector).all()) else None
