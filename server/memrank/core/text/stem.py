"""Snowball stemming: the word forms a query term matches ("painting" finds "painted" and "paints").

The Snowball algorithms (snowballstemmer, which runs PyStemmer's C build of
the same algorithms when that is installed: the same stems, faster) reduce a
lower-cased word to its stem. ``LANGUAGES`` lists them ("english", "french",
"german", ... as snowballstemmer names them).

In English a batch's words are not all stemmed: an English Snowball stem
begins with the first letters of its word, so the words that can share a
stem with a query term begin with the stem's first ``PREFIX_BYTES`` bytes
(UTF-8). Only those few, found column-wise in the batch's token index, are
stemmed (``matching``), each distinct word once. A word the algorithm
rewrites at its start ("dying" -> "die") is missed, and then only its exact
form matches. Other languages' stemmers rewrite letters anywhere (German
drops umlauts: "häuser" -> "haus"), so there every distinct word of the batch
is stemmed.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import snowballstemmer

from memrank.core.text.hashing import encode
from memrank.core.text.index import WordIndex

LANGUAGES: tuple[str, ...] = tuple(sorted(snowballstemmer.algorithms()))
PREFIX_BYTES = 2
PREFIX_LANGUAGES = frozenset({"english", "porter"})  # stems that begin with their word's first two bytes


@functools.cache
def _stemmer(language: str) -> Any:
    return snowballstemmer.stemmer(language)


@functools.lru_cache(maxsize=65536)
def stem(language: str, word: str) -> str:
    """The Snowball stem of a lower-cased word (a pure function; cached: batches share their words)."""
    result: str = _stemmer(language).stemWord(word)
    return result


class StemRule:
    """When a word matches one of ``stems``: its stem is that stem and, in a prefix language, its UTF-8 bytes
    begin with the stem's first ``PREFIX_BYTES`` bytes (so no word matches an empty stem there)."""

    def __init__(self, language: str, stems: list[str]) -> None:
        self.language = language
        self.prefixed = language in PREFIX_LANGUAGES
        self.prefixes = [encode(s)[:PREFIX_BYTES] if self.prefixed else b"" for s in stems]
        self.wanted = {s: k for k, s in enumerate(stems) if self.prefixes[k] or not self.prefixed}
        # A word that begins with none of these cannot match (so it is not stemmed).
        self.starts = tuple(p for p in self.prefixes if p) if self.prefixed else (b"",)

    def which(self, word: str, raw: bytes) -> int:
        """The index in ``stems`` of the stem the word (``raw``: its ``encode``) matches, else -1."""
        if not raw.startswith(self.starts):
            return -1
        k = self.wanted.get(stem(self.language, word), -1)
        return k if k >= 0 and raw.startswith(self.prefixes[k]) else -1


def matching(index: WordIndex, language: str, stems: list[str]) -> np.ndarray:
    """(words,) int64: per word position of the index, the index in ``stems`` of its stem, else -1.

    One pass for all the stems: the positions that can match (in a prefix language, the words that begin
    with some stem's first bytes; else every word) are grouped by hash, and the word at each group's first
    position is read and stemmed (each distinct word once). A group whose word's stem is wanted (and, in a
    prefix language, which begins with that stem's own first bytes) keeps the positions holding exactly that
    word: of its length and, past 8 bytes, its bytes, so a word sharing its hash never matches in its place.
    """
    out = np.full(index.hashes.size, -1, dtype=np.int64)
    rule = StemRule(language, stems)
    if not rule.wanted or not index.hashes.size:
        return out
    at = index.starting_with_any(list(rule.starts)) if rule.prefixed else np.arange(index.hashes.size)
    if not at.size:
        return out
    _, first, group = np.unique(index.hashes[at], return_index=True, return_inverse=True)
    words = [index.word_at(p) for p in at[first].tolist()]
    raws = [encode(w) for w in words]
    found = [rule.which(w, raw) for w, raw in zip(words, raws, strict=True)]
    if max(found) < 0:
        return out
    which = np.array(found, dtype=np.int64)[group]
    sizes = np.array([len(raw) if k >= 0 else -1 for raw, k in zip(raws, found, strict=True)], dtype=np.int32)
    exact = index.lengths[at] == sizes[group]  # a hash and a length of at most 8 bytes: the same word
    for g in (g for g, raw in enumerate(raws) if found[g] >= 0 and len(raw) > 8):  # longer: byte for byte
        mine = np.flatnonzero(exact & (group == g))
        exact[mine] = np.isin(at[mine], index.verified(at[mine], raws[g]))
    out[at[exact]] = which[exact]
    return out
