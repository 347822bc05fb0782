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


def matching(index: WordIndex, language: str, stems: list[str]) -> np.ndarray:
    """(words,) int64: per word position of the index, the index in ``stems`` of its stem, else -1."""
    out = np.full(index.hashes.size, -1, dtype=np.int64)
    if language not in PREFIX_LANGUAGES:
        wanted = {s: k for k, s in enumerate(stems)}
        for word in _distinct(index, np.arange(index.hashes.size)):
            k = wanted.get(stem(language, word), -1)
            if k >= 0:
                hit = index.positions(word)
                out[hit[out[hit] < 0]] = k
        return out
    for k, s in enumerate(stems):
        prefix = encode(s)[:PREFIX_BYTES]
        at = index.starting_with(prefix) if prefix else np.zeros(0, dtype=np.int64)
        for word in _distinct(index, at):
            if stem(language, word) == s:
                hit = index.positions(word)  # verified byte for byte: a hash collision never matches
                out[hit[out[hit] < 0]] = k
    return out


def _distinct(index: WordIndex, at: np.ndarray) -> set[str]:
    """The distinct words at the given positions (one read per distinct hash)."""
    if not at.size:
        return set()
    _, first = np.unique(index.hashes[at], return_index=True)
    return {index.word_at(int(at[p])) for p in first.tolist()}
