"""How the receipt's canonical form writes one value, and the bytes of whole columns (``core.explain.receipt``).

``f(x)``: the 16 lower-case hex digits of x's big-endian float64 bits; ``q(s)``: the JSON string literal of s with
ASCII escapes; ``h(b)``: the SHA-256 hex of b; ``-`` for an unset optional value. The column encodings ``S``,
``F``, ``O``, ``M`` and ``K`` are the receipt docstring's: each column's bytes in a few numpy or C-level calls.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Mapping, Sequence
from json.encoder import encode_basestring_ascii

import numpy as np

q = encode_basestring_ascii  # q(s): the JSON string literal of s with ASCII escapes (json.dumps's, in C)


def f(x: float) -> str:
    """The 16 hex digits of the big-endian float64 bits of x."""
    return struct.pack(">d", x).hex()


def opt(x: float | None) -> str:
    return "-" if x is None else f(x)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def strings(values: Sequence[str]) -> bytes:
    """S: the values' UTF-8 byte lengths as 4-byte big-endian integers, then their UTF-8 bytes, concatenated."""
    text = "".join(values)
    # ASCII text (ids, kinds, layers mostly are) has one byte per character: lengths without encoding each value,
    # half the time of a column (1,600 ids: 0.18 against 0.33 ms).
    encoded: Sequence[str | bytes] = values if text.isascii() else [s.encode() for s in values]
    return _lengths(list(map(len, encoded))) + text.encode()


def _lengths(sizes: list[int]) -> bytes:
    """Byte lengths as 4-byte big-endian unsigned integers (one C call: no array made for a few values)."""
    return struct.pack(f">{len(sizes)}I", *sizes)


# Characters of a string column joined and encoded at a time by ``strings_sha256``: a column of large contents
# (1,600 x 40 KB) is hashed in pieces, never held whole as one string and its UTF-8 copy (three copies of it with S's
# concatenation: the largest request's peak); a column of ordinary ids or contents is one piece.
_PIECE = 1 << 20


def strings_sha256(values: Sequence[str]) -> str:
    """h(S(values)): the SHA-256 hex of S's bytes, fed to the hash a piece at a time (at most ``_PIECE``
    characters of text, a longer value alone) instead of made whole."""
    digest = hashlib.sha256()
    ascii_only = all(map(str.isascii, values))  # one byte per character: lengths without encoding each value
    sizes = list(map(len, values)) if ascii_only else [len(s.encode()) for s in values]
    digest.update(_lengths(sizes))
    for piece in _pieces(values, sizes):
        digest.update("".join(piece).encode())
    return digest.hexdigest()


def _pieces(values: Sequence[str], sizes: list[int]) -> list[Sequence[str]]:
    """Runs of consecutive values of at most ``_PIECE`` bytes each (a larger value alone); one run when all fit."""
    if sum(sizes) <= _PIECE:
        return [values]
    runs, start, held = [], 0, 0
    for i, size in enumerate(sizes):
        if held and held + size > _PIECE:
            runs.append(values[start:i])
            start, held = i, 0
        held += size
    runs.append(values[start:])
    return runs


def numbers(col: np.ndarray) -> bytes:
    """F: each value as its big-endian IEEE-754 float64 bytes."""
    data: bytes = np.ascontiguousarray(col, dtype=">f8").tobytes()
    return data


def optional(col: np.ndarray) -> bytes:
    """O: one presence byte per value (0 where NaN, the server's unset), then F with 0.0 where unset."""
    unset = np.isnan(col)
    present: bytes = (~unset).astype(np.uint8).tobytes()
    return present + numbers(np.where(unset, 0.0, col))


def numbers_sha256(cols: Sequence[np.ndarray]) -> list[str]:
    """h(F(col)) of each column (all of one length): the columns as one float64 matrix, converted at once."""
    n = len(cols[0])
    data = memoryview(np.array(cols, dtype=">f8").tobytes())
    return [hashlib.sha256(data[k * 8 * n:(k + 1) * 8 * n]).hexdigest() for k in range(len(cols))]


def optional_sha256(cols: Sequence[np.ndarray]) -> list[str]:
    """h(O(col)) of each column (all of one length): presence and values of every column in one pass each."""
    n = len(cols[0])
    matrix = np.array(cols, dtype=np.float64)
    unset = np.isnan(matrix)
    present = memoryview((~unset).tobytes())  # a bool is one byte, 0 or 1: O's presence bytes
    values = memoryview(np.where(unset, 0.0, matrix).astype(">f8").tobytes())
    out = []
    for k in range(len(cols)):
        digest = hashlib.sha256(present[k * n:(k + 1) * n])
        digest.update(values[k * 8 * n:(k + 1) * 8 * n])
        out.append(digest.hexdigest())
    return out


def keyed(columns: Mapping[str, np.ndarray]) -> bytes:
    """M: per name carried by any candidate, in UTF-8 byte order (code point order): S of the name, then O of its
    column (a column that is NaN throughout names no candidate's value)."""
    names = sorted(name for name, col in columns.items() if not np.isnan(col).all())
    return b"".join(strings((name,)) + optional(columns[name]) for name in names)


def key_sets(maps: Sequence[Mapping[str, str]]) -> bytes:
    """K: the n key counts as 4-byte big-endian unsigned integers, then S of every candidate's keys, each
    candidate's in UTF-8 byte order, candidates in order."""
    return _lengths(list(map(len, maps))) + strings([k for m in maps if m for k in sorted(m)])
