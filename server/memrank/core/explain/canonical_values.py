"""How the receipt's canonical form writes one value, and whole columns of them (``core.explain.receipt``).

``f(x)``: the 16 lower-case hex digits of x's big-endian float64 bits; ``q(s)``: the JSON string literal of s with
ASCII escapes; ``h(b)``: the SHA-256 hex of b; ``-`` for an unset optional value. The column forms give the same
strings as the one-value forms, value by value, with one conversion per column.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Sequence
from itertools import repeat
from json.encoder import encode_basestring_ascii

import numpy as np

q = encode_basestring_ascii  # q(s): the JSON string literal of s with ASCII escapes (json.dumps's, in C)
EMPTY = q("")


def f(x: float) -> str:
    """The 16 hex digits of the big-endian float64 bits of x."""
    return struct.pack(">d", x).hex()


def opt(x: float | None) -> str:
    return "-" if x is None else f(x)


def hexes(col: np.ndarray) -> list[str]:
    """f of every value of a float64 column (one conversion for the whole column)."""
    return np.ascontiguousarray(col, dtype=">f8").tobytes().hex(" ", 8).split(" ") if len(col) else []


def opt_hexes(col: np.ndarray) -> list[str]:
    """f of every value, "-" where it is NaN (unset)."""
    unset = np.isnan(col)
    if unset.all():
        return ["-"] * len(col)
    out = hexes(col)
    for i in np.flatnonzero(unset).tolist():
        out[i] = "-"
    return out


_SMALL = [str(i) for i in range(1024)]


def ints(col: np.ndarray) -> Iterable[str]:
    """Decimal strings of an integer column (small values from a table: most counts are; one repeated string when
    every value is the same)."""
    values: list[int] = col.tolist()
    if not values:
        return []
    low, high = min(values), max(values)
    if low == high:
        return repeat(str(low))
    if low >= 0 and high < len(_SMALL):
        return list(map(_SMALL.__getitem__, values))
    return list(map(str, values))


def quoted(values: Sequence[str]) -> Iterable[str]:
    """q of each value (one repeated literal when they are all the same, as "" for unset threads often is)."""
    if values and values.count(values[0]) == len(values):
        return repeat(q(values[0]))
    return list(map(q, values))


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def shas(texts: Iterable[str]) -> list[str]:
    """sha of each text."""
    return [hashlib.sha256(b).hexdigest() for b in map(str.encode, texts)]
