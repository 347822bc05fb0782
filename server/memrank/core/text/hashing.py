"""Word hashes of the text index: one 64-bit polynomial hash per word, and collision-free tables of word lists.

A word's hash is computed over its UTF-8 bytes as the index stores them
(``encode``): 8-byte little-endian chunks c0, c1, ... combined as h = c0,
then h = h * P + c modulo 2**64. A word of at most 8 bytes is its own packed
value, so no two such words share a hash. ``word_table`` builds, for a
constant word list (a rule's phrases), a small table in which each listed
word owns one slot, so a batch's words are looked up in one vectorised step.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

MASK = (1 << 64) - 1
P = 0x9E3779B97F4A7C15  # odd multiplier of the chunk combination


def word_hash(word: bytes) -> int:
    """The hash the index stores for a word's bytes.

    The word's 8-byte little-endian chunks c0, c1, ... (the last zero-padded), combined as
    h = c0, then h = h * P + c modulo 2**64 for each further chunk. A word of at most 8 bytes is
    its own packed value: no two such words share a hash (no word holds a zero byte).
    """
    h = int.from_bytes(word[:8], "little")
    for at in range(8, len(word), 8):
        h = (h * P + int.from_bytes(word[at:at + 8], "little")) & MASK
    return h


def encode(word: str) -> bytes:
    """A word as the index stores it (UTF-8, lone surrogates kept, NUL as 0xFF)."""
    return word.encode("utf-8", "surrogatepass").replace(b"\0", b"\xff")


@functools.lru_cache(maxsize=4096)
def word_key(word: str) -> tuple[bytes, int]:
    """(bytes, hash) of a word; the rule phrases' words are asked for again and again."""
    raw = encode(word)
    return raw, word_hash(raw)


@dataclass(frozen=True)
class WordTable:
    """A collision-free hash table of a word list: ``slots[(h * multiplier) >> shift]`` is the index of the
    listed word whose hash is h, if any (a candidate only: the caller compares the hash and the length)."""

    multiplier: np.uint64
    shift: np.uint64
    slots: np.ndarray  # int32 (2 ** bits,): word index or -1
    hashes: np.ndarray  # uint64 per listed word
    sizes: np.ndarray  # int64 byte length per listed word (0: never matches)
    raws: tuple[bytes, ...]
    words: tuple[str, ...]  # the listed words, in order


# Odd 64-bit multipliers tried in turn for a table without two words in one slot.
_MULTIPLIERS = tuple((0x9E3779B97F4A7C15 * (2 * k + 1)) & MASK | 1 for k in range(64))


@functools.lru_cache(maxsize=512)
def word_table(words: tuple[str, ...]) -> WordTable:
    """The table of a word list (rule lists are constant, so each is built once); ValueError when two listed
    words share a hash (only words of more than 8 bytes can)."""
    keys = [word_key(w) for w in words]
    hashes = [h for _, h in keys]
    if len(set(hashes)) != len(hashes):
        raise ValueError(f"two of these words share a hash: {words!r}")
    sizes = np.array([len(raw) for raw, _ in keys], dtype=np.int64)
    table = np.array(hashes, dtype=np.uint64)
    bits = max(4, (len(words) ** 2).bit_length() + 1)  # slots >= 2 * words ** 2: most multipliers fit at once
    while True:
        for m in _MULTIPLIERS:
            slot = (table * np.uint64(m)) >> np.uint64(64 - bits)
            if np.unique(slot).size == slot.size:
                slots = np.full(1 << bits, -1, dtype=np.int32)
                slots[slot] = np.arange(len(words))
                return WordTable(np.uint64(m), np.uint64(64 - bits), slots, table, sizes,
                                 tuple(raw for raw, _ in keys), words)
        bits += 1
