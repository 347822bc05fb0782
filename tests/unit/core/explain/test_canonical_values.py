"""A string column's receipt digest, streamed in pieces, and the number columns' digests, converted together,
against S's, F's and O's bytes written out by hand."""

from __future__ import annotations

import hashlib
import struct

import numpy as np
import pytest

from memrank.core.explain.canonical_values import numbers_sha256, optional_sha256, strings, strings_sha256


def s_bytes(values: list[str]) -> bytes:
    """S by its definition: each UTF-8 byte length as a 4-byte big-endian integer, then the UTF-8 bytes."""
    return b"".join(struct.pack(">I", len(v.encode("utf-8"))) for v in values) + b"".join(
        v.encode("utf-8") for v in values)


COLUMNS = {
    "empty": [],
    "one empty value": [""],
    "ascii": ["m1", "m2", "", "memory-3"],
    "non-ascii": ["é", "東京", "😀 emoji", "plain"],
    "many pieces": ["a" * 300_000] * 9,  # 2.7 M characters: runs of three values
    "a value over a piece": ["x" * 3_000_000, "y", "z" * 10],
    "non-ascii over pieces": ["ü" * 700_000, "ascii " * 100_000, "日本" * 300_000],
}


@pytest.mark.parametrize("name", list(COLUMNS))
def test_streamed_digest_is_the_sha256_of_s(name: str) -> None:
    values = COLUMNS[name]
    assert strings_sha256(values) == hashlib.sha256(s_bytes(values)).hexdigest()
    assert strings(values) == s_bytes(values)


def f_bytes(values: list[float]) -> bytes:
    """F by its definition: each value's IEEE-754 float64 bits, big-endian."""
    return b"".join(struct.pack(">d", v) for v in values)


def o_bytes(values: list[float]) -> bytes:
    """O by its definition: a presence byte per value (0 for NaN, the unset value), then F with 0.0 where unset."""
    unset = [v != v for v in values]
    return bytes(0 if u else 1 for u in unset) + f_bytes([0.0 if u else v for v, u in zip(values, unset, strict=True)])


NUMBER_COLUMNS = {
    "empty": [[], []],
    "one": [[0.25], [-0.0], [7.0]],
    "mixed": [[1.5, float("nan"), -2.0, 1e300], [0.0, 3.0, float("nan"), float("nan")], [5.0, 6.0, 7.0, 8.0]],
}


@pytest.mark.parametrize("name", list(NUMBER_COLUMNS))
def test_number_columns_digests_are_each_columns_sha256(name: str) -> None:
    rows = NUMBER_COLUMNS[name]
    ints = [np.array([int(v) if v == v and abs(v) < 1e18 else 0 for v in row], dtype=np.int64) for row in rows]
    assert numbers_sha256(ints) == [hashlib.sha256(f_bytes([float(v) for v in c.tolist()])).hexdigest()
                                    for c in ints]
    assert numbers_sha256([np.array(r) for r in rows]) == [hashlib.sha256(f_bytes(r)).hexdigest() for r in rows]
    assert optional_sha256([np.array(r) for r in rows]) == [hashlib.sha256(o_bytes(r)).hexdigest() for r in rows]
