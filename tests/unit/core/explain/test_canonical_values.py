"""A string column's receipt digest, streamed in pieces, against S's bytes written out by hand."""

from __future__ import annotations

import hashlib
import struct

import pytest

from memrank.core.explain.canonical_values import strings, strings_sha256


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
