"""Fast rule matching for the rule-based signals: whole-word phrases and guarded patterns.

``re`` scans every position of a text for every alternative, which is slow
on long memories in Python. Rules are therefore whole-word phrases tested
as substrings of the text's *padded words* (" word word ... word ":
case-folded head/tail sample, punctuation as spaces, single spaces), grouped
by first word so that one C-speed test rules out a whole group. The few real
patterns (safety) are guarded by literals that every match contains.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import numpy as np

from memrank.core.text import fold, sample
from memrank.core.wordindex import WordIndex

# Punctuation becomes a space, so "that's" reads "that s" and "don't" "don t".
_PUNCT_CHARS = "!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~'’‘“”«»—–…¡¿"
_PUNCT = str.maketrans({c: " " for c in _PUNCT_CHARS})
# The same mapping for ASCII text as a bytes table (bytes.translate is much faster than str.translate).
_ASCII_PUNCT = bytes(32 if chr(b) in _PUNCT_CHARS else b for b in range(256))


def words(text: str) -> str:
    """The padded words of the text's head/tail sample."""
    s = sample(text)
    if s.isascii():  # fold() is lower() on ASCII text
        spaced = s.lower().encode("ascii").translate(_ASCII_PUNCT).decode("ascii")
    else:
        spaced = fold(s).translate(_PUNCT)
    return " " + " ".join(spaced.split()) + " "


# first_found follows this many candidate phrases or fewer one at a time, more all at once.
FEW_PHRASES = 8


class Phrases:
    """Whole-word phrases (words separated by single spaces), searched in padded words."""

    def __init__(self, phrases: Iterable[str]) -> None:
        self.items = tuple(phrases)
        groups: dict[str, list[str]] = {}
        for p in self.items:
            groups.setdefault(p.split()[0], []).append(p)
        self._groups = tuple((first, tuple((p, f" {p} ") for p in ps)) for first, ps in groups.items())
        self._firsts = frozenset(groups)
        self._rank = {first: k for k, (first, _) in enumerate(self._groups)}

    def find(self, padded: str, words: AbstractSet[str] | None = None) -> str | None:
        """The first phrase (in group order) that occurs in the padded words, or None.

        ``words``, when given, is the set of the padded words (``batch_word_sets``).
        """
        # A first word occurs as " word " exactly when it is one of the split words; one C-speed set
        # intersection rules out every group that cannot match.
        present = self._firsts.intersection(padded.split() if words is None else words)
        if not present:
            return None
        for k in sorted(self._rank[first] for first in present):  # only the groups that can match, in order
            for phrase, needle in self._groups[k][1]:
                if needle in padded:
                    return phrase
        return None

    @functools.cached_property
    def ordered(self) -> tuple[str, ...]:
        """Every phrase in the order ``find`` tries them (group by group)."""
        return tuple(p for _, group in self._groups for p, _ in group)

    @functools.cached_property
    def _split(self) -> tuple[tuple[str, ...], ...]:
        return tuple(tuple(p.split()) for p in self.ordered)

    @functools.cached_property
    def _words(self) -> tuple[str, ...]:
        return tuple({w: None for p in self._split for w in p})

    @functools.cached_property
    def _word_table(self) -> np.ndarray:
        """(phrases, longest) positions in ``_words`` of each phrase's words, padded with len(_words)."""
        at = {w: k for k, w in enumerate(self._words)}
        width = max((len(p) for p in self._split), default=0)
        table = np.full((len(self._split), width), len(self._words), dtype=np.int64)
        for k, phrase in enumerate(self._split):
            table[k, : len(phrase)] = [at[w] for w in phrase]
        return table

    @functools.cached_property
    def _keys(self) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """Per phrase length L: the phrases' keys (word positions in ``_words`` as digits base len + 1),
        sorted, and the ``ordered`` position of the phrase with each key (the first, for a repeated one)."""
        base = len(self._words) + 1
        if base ** max((len(p) for p in self._split), default=0) >= 2**62:
            raise ValueError("too many words or too long a phrase for int64 phrase keys")
        at = {w: k for k, w in enumerate(self._words)}
        by_length: dict[int, dict[int, int]] = {}
        for k, phrase in enumerate(self._split):
            key = 0
            for w in phrase:
                key = key * base + at[w]
            by_length.setdefault(len(phrase), {}).setdefault(key, k)
        return {length: (np.array(sorted(keys), dtype=np.int64),
                         np.array([keys[key] for key in sorted(keys)], dtype=np.int64))
                for length, keys in by_length.items() if length}

    def first_found(self, index: WordIndex, rows: np.ndarray | None = None) -> np.ndarray:
        """Per candidate of a padded-words index, the position in ``ordered`` of what ``find`` returns, or -1.

        ``rows`` (a mask) limits the search to those candidates; the others get -1. ``find`` returns the
        phrase that comes first in ``ordered`` among those that occur, so this is, per candidate, the
        smallest position of a phrase found in its words. Every listed word is looked up in one pass
        (``WordIndex.word_ids``); then, per phrase length L, the L word numbers from each position holding
        a listed word form one key, looked up among the phrases' keys: a few array operations per length,
        whatever the number of phrases. With at most ``FEW_PHRASES`` phrases whose words all occur, those
        are searched one by one instead.
        """
        best = np.full(index.n, -1, dtype=np.int64)
        open_ = np.ones(index.n, dtype=bool) if rows is None else rows.copy()
        if not open_.any():
            return best
        present = np.append(index.learn(self._words), True)
        viable = np.flatnonzero(present[self._word_table].all(axis=1)).tolist()  # every word of it occurs
        if len(viable) <= FEW_PHRASES:  # phrase by phrase, from the index's memo of each word's positions
            for k in viable:
                hit = index.has(self._split[k]) & open_
                best[hit] = k
                open_ &= ~hit
                if not open_.any():
                    break
            return best
        ids = index.word_ids(self._words)
        at = np.flatnonzero(ids >= 0)
        at = at[open_[index.owner[at]]]
        size, base = ids.size, len(self._words) + 1
        first = np.full(at.size, np.iinfo(np.int64).max)
        for length, (keys, which) in self._keys.items():
            fits = np.flatnonzero(at + length - 1 < size)
            start = at[fits]
            key = ids[start]
            valid = np.ones(start.size, dtype=bool)
            for j in range(1, length):
                nxt = ids[start + j]
                valid &= (nxt >= 0) & (index.owner[start + j] == index.owner[start])
                key = key * base + nxt
            slot = np.minimum(np.searchsorted(keys, key), keys.size - 1)
            hit = np.flatnonzero(valid & (keys[slot] == key))
            np.minimum.at(first, fits[hit], which[slot[hit]])
        found = np.flatnonzero(first < np.iinfo(np.int64).max)
        smallest = np.full(index.n, np.iinfo(np.int64).max)
        np.minimum.at(smallest, index.owner[at[found]], first[found])
        held = smallest < np.iinfo(np.int64).max
        best[held] = smallest[held]
        return best

    def __add__(self, other: Phrases) -> Phrases:
        return Phrases(self.items + other.items)


def starts_with(padded: str, phrase: str) -> bool:
    """True when the padded words open with the phrase."""
    return padded.startswith(f" {phrase} ")


@dataclass(frozen=True)
class Cue:
    """A case-insensitive pattern and literals of which every match contains one."""

    triggers: tuple[str, ...]
    pattern: re.Pattern[str]

    def search(self, text: str, folded: str) -> bool:
        """True when the pattern matches the text (folded = fold(text))."""
        for t in self.triggers:  # a plain loop: any() over a generator costs more than the tests
            if t in folded:
                return self.pattern.search(text) is not None
        return False
