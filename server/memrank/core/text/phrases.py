"""Fast rule matching for the rule-based signals: whole-word phrases and guarded patterns.

``re`` scans every position of a text for every alternative, which is slow
on long memories in Python. Rules are therefore whole-word phrases tested
as substrings of the text's *padded words* (``words.padded_words``:
" word word ... word ", case-folded head/tail sample, punctuation as single
spaces), grouped
by first word so that one C-speed test rules out a whole group. The few real
patterns (safety) are guarded by literals that every match contains.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import numpy as np

from memrank.core.text.hashing import word_table
from memrank.core.text.index import WordIndex

# first_found follows this many candidate phrases or fewer one at a time, more all at once. Measured on
# 400 candidates (the bench batch: 10 candidate rule phrases; 400 LoCoMo turns: 69), one at a time costs
# less up to about two dozen phrases. Always all at once instead, instructions per call (2026-12-06,
# ``python -m bench.instructions MAIN/server WITHOUT/server --sizes 1,100,400 [--form columns]``): +3.2 % at
# 400 x 384 (80.41 -> 83.00 M), columns +4.0 % (65.80 -> 68.44 M); +2.2 % / +2.4 % at 100; -1.4 % / +0.1 % at 1.
FEW_PHRASES = 24


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
    def _matcher(self) -> _Matcher:
        return _Matcher([tuple(p.split()) for p in self.ordered], range(len(self.ordered)))

    def first_found(self, index: WordIndex, rows: np.ndarray | None = None) -> np.ndarray:
        """Per candidate of a padded-words index, the position in ``ordered`` of what ``find`` returns, or -1.

        ``rows`` (a mask) limits the search to those candidates; the others get -1. ``find`` returns the
        phrase that comes first in ``ordered`` among those that occur, so this is, per candidate, the
        smallest position of a phrase found in its words (``_Matcher``).
        """
        return self._matcher.first(index, rows)

    def __add__(self, other: Phrases) -> Phrases:
        return Phrases(self.items + other.items)


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


class _Matcher:
    """Phrases (as word tuples), each with a rank; per candidate, the smallest rank of a phrase in its words.

    Phrases whose words do not all occur in the batch are ruled out at once (``WordIndex.present_listed`` over the
    word table). With at most ``FEW_PHRASES`` left, those are followed one by one in rank order, from the index's
    memo of each word's positions. Otherwise every listed word is looked up in one pass (``WordIndex.listed_hits``)
    and, per phrase length L, the L word numbers from each position holding a listed word form one key, looked up
    among the phrases' keys: a few array operations per length, whatever the number of phrases.
    """

    _NONE = np.iinfo(np.int64).max

    def __init__(self, phrases: Sequence[tuple[str, ...]], ranks: Iterable[int]) -> None:
        self.split = tuple(phrases)
        self.ranks = np.array(list(ranks), dtype=np.int64)
        self.order = np.argsort(self.ranks, kind="stable")
        self.words = tuple({w: None for p in self.split for w in p})
        self._table = word_table(self.words)  # constant: built once
        at = {w: k for k, w in enumerate(self.words)}
        width = max((len(p) for p in self.split), default=0)
        self.table = np.full((len(self.split), width), len(self.words), dtype=np.int64)
        for k, phrase in enumerate(self.split):
            self.table[k, : len(phrase)] = [at[w] for w in phrase]
        base = len(self.words) + 1
        if base ** width >= 2**62:
            raise ValueError("too many words or too long a phrase for int64 phrase keys")
        by_length: dict[int, dict[int, int]] = {}
        for k, phrase in enumerate(self.split):
            key = 0
            for w in phrase:
                key = key * base + at[w]
            rank = int(self.ranks[k])
            keyed = by_length.setdefault(len(phrase), {})
            keyed[key] = min(keyed.get(key, rank), rank)
        # Per phrase length: the phrases' keys (word numbers as digits base len(words) + 1), sorted, and the
        # smallest rank of a phrase with each key.
        self.keys = {length: (np.array(sorted(keyed), dtype=np.int64),
                              np.array([keyed[key] for key in sorted(keyed)], dtype=np.int64))
                     for length, keyed in by_length.items() if length}

    def first(self, index: WordIndex, rows: np.ndarray | None = None) -> np.ndarray:
        """(n,) int64: the smallest rank of a phrase in each candidate's words, or -1 (and -1 outside rows)."""
        best = np.full(index.n, -1, dtype=np.int64)
        open_ = np.ones(index.n, dtype=bool) if rows is None else rows.copy()
        if not open_.any() or not self.split:
            return best
        present = np.append(index.present_listed(self._table), True)
        viable = np.asarray(present[self.table].all(axis=1))  # every word of the phrase occurs somewhere
        left = self.order[viable[self.order]].tolist()  # in rank order
        if len(left) <= FEW_PHRASES:
            for k in left:
                hit = index.has(self.split[k]) & open_
                best[hit] = self.ranks[k]
                open_ &= ~hit
                if not open_.any():
                    break
            return best
        ids = np.full(index.hashes.size, -1, dtype=np.int64)  # per word position, the listed word there or -1
        hit, listed = index.listed_hits(self._table)
        ids[hit] = listed
        at = np.flatnonzero(ids >= 0)
        at = at[open_[index.owner[at]]]
        size, base = ids.size, len(self.words) + 1
        first = np.full(at.size, self._NONE)
        for length, (keys, ranks) in self.keys.items():
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
            np.minimum.at(first, fits[hit], ranks[slot[hit]])
        found = np.flatnonzero(first < self._NONE)
        smallest = np.full(index.n, self._NONE)
        np.minimum.at(smallest, index.owner[at[found]], first[found])
        held = smallest < self._NONE
        best[held] = smallest[held]
        return best


class PhraseSets:
    """Several phrase lists tried in order, as rule lists are: per candidate, the first list with a phrase
    in its words and the phrase that list's ``find`` returns, all lists searched together."""

    def __init__(self, sets: Sequence[Phrases]) -> None:
        self.sets = tuple(sets)
        self._stride = max((len(p.ordered) for p in self.sets), default=0) + 1
        phrases = [tuple(phrase.split()) for p in self.sets for phrase in p.ordered]
        ranks = [r * self._stride + k for r, p in enumerate(self.sets) for k in range(len(p.ordered))]
        self._matcher = _Matcher(phrases, ranks)

    def first_found(self, index: WordIndex, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Per candidate: (index of the first list with a phrase found, or -1; that phrase's position in the
        list's ``ordered``, or -1)."""
        rank = self._matcher.first(index, rows)
        found = rank >= 0
        return np.where(found, rank // self._stride, -1), np.where(found, rank % self._stride, -1)

    def first_in(self, padded: str) -> tuple[int, int]:
        """``first_found`` of one candidate's padded words."""
        words = frozenset(padded.split())
        for k, phrases in enumerate(self.sets):
            found = phrases.find(padded, words)
            if found is not None:
                return k, phrases.ordered.index(found)
        return -1, -1
