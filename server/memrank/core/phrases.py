"""Fast rule matching for the rule-based signals: whole-word phrases and guarded patterns.

``re`` scans every position of a text for every alternative, which is slow
on long memories in Python. Rules are therefore whole-word phrases tested
as substrings of the text's *padded words* (" word word ... word ":
case-folded head/tail sample, punctuation as spaces, single spaces), grouped
by first word so that one C-speed test rules out a whole group. The few real
patterns (safety) are guarded by literals that every match contains.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterable
from dataclasses import dataclass

from memrank.core.batch import Batch
from memrank.core.text import fold, sample

# Punctuation becomes a space, so "that's" reads "that s" and "don't" "don t".
_PUNCT = str.maketrans({c: " " for c in "!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~'’‘“”«»—–…¡¿"})


def words(text: str) -> str:
    """The padded words of the text's head/tail sample."""
    return " " + " ".join(fold(sample(text)).translate(_PUNCT).split()) + " "


# id(batch) -> its words, for exactly as long as the batch lives (a finalizer
# drops the entry when the batch is freed, before its id can be reused).
_MEMO: dict[int, tuple[str, ...]] = {}


def batch_words(batch: Batch) -> tuple[str, ...]:
    """``words`` of every content of the batch, computed once per batch.

    Importance, stability and confidence all read them within one scoring
    call. The memo holds nothing beyond the batch's own lifetime and the
    function is pure, so it is not state.
    """
    key = id(batch)
    found = _MEMO.get(key)
    if found is None:
        found = tuple(words(c) for c in batch.contents)
        _MEMO[key] = found
        weakref.finalize(batch, _MEMO.pop, key, None)
    return found


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
