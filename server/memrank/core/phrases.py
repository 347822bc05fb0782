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

    def first_found(self, index: WordIndex, rows: np.ndarray | None = None) -> np.ndarray:
        """Per candidate of a padded-words index, the position in ``ordered`` of what ``find`` returns, or -1.

        ``rows`` (a mask) limits the search to those candidates; the others get -1. Phrases with a word
        no candidate holds are ruled out all at once; the rest are searched in order.
        """
        best = np.full(index.n, -1, dtype=np.int64)
        open_ = np.ones(index.n, dtype=bool) if rows is None else rows.copy()
        present = np.append(index.learn(self._words), True)
        for k in np.flatnonzero(present[self._word_table].all(axis=1)).tolist():
            if not open_.any():
                break
            hit = index.has(self._split[k]) & open_
            best[hit] = k
            open_ &= ~hit
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
