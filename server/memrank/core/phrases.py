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
from dataclasses import dataclass

from memrank.core.text import fold, sample

# Punctuation becomes a space, so "that's" reads "that s" and "don't" "don t".
_PUNCT = str.maketrans({c: " " for c in "!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~'’‘“”«»—–…¡¿"})


def words(text: str) -> str:
    """The padded words of the text's head/tail sample."""
    return " " + " ".join(fold(sample(text)).translate(_PUNCT).split()) + " "


@functools.lru_cache(maxsize=4)
def batch_words(contents: tuple[str, ...]) -> tuple[str, ...]:
    """``words`` of every content of a batch.

    Memoised (a handful of batches, bounded) because importance, stability
    and confidence all read them within one scoring call; the function is
    pure, so the memo is not state.
    """
    return tuple(words(c) for c in contents)


class Phrases:
    """Whole-word phrases (words separated by single spaces), searched in padded words."""

    def __init__(self, phrases: Iterable[str]) -> None:
        self.items = tuple(phrases)
        groups: dict[str, list[str]] = {}
        for p in self.items:
            groups.setdefault(p.split()[0], []).append(p)
        self._groups = tuple((f" {first} ", tuple((p, f" {p} ") for p in ps)) for first, ps in groups.items())

    def find(self, padded: str) -> str | None:
        """The first phrase (in group order) that occurs in the padded words, or None."""
        for first, members in self._groups:
            if first in padded:
                for phrase, needle in members:
                    if needle in padded:
                        return phrase
        return None

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
        return any(t in folded for t in self.triggers) and self.pattern.search(text) is not None
