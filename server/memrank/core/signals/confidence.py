"""Confidence as specificity: concrete memories are more trustworthy to act on.

    confidence = 0.30                       base
               + 0.15 if the sample has a number
               + 0.15 if it has a date (ISO or d/m/y, month + day, weekday, yesterday,
                 tomorrow, last/next week/month/year)
               + 0.15 if it names an entity (an ASCII-capitalised word not opening
                 a sentence, or an all-capitals word of 2+ letters)
               + 0.10 if event_time is set
               + 0.10 if the source is known (not unset or unknown)
               + 0.05 if the caller sent metadata (reserved "_" keys ignored)

in [0.30, 1.0]. Reserved metadata keys (leading "_") are ignored and the
reasons say so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np

from memrank.core.batch import Batch
from memrank.core.profile import Profile
from memrank.core.reasons import Lazy
from memrank.core.signals.base import RawSignal, ScoringContext
from memrank.core.text.buffers import padded_index, short_ascii, token_index
from memrank.core.text.phrases import Phrases
from memrank.core.text.words import fold, padded_words, sample
from memrank.core.types import Source

BASE = 0.30
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH = rf"(?:{'|'.join(_MONTHS)})[a-z]*\.?"
_NUMBER = re.compile(r"\d")
_SLASH_DASH_DATE = re.compile(r"\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{2,4}")
_MONTH_DATE = re.compile(rf"\b{_MONTH} \d{{1,2}}\b|\b\d{{1,2}} {_MONTH}")  # on the folded text
DATE_WORDS = Phrases(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "yesterday",
                      "tomorrow", "last week", "next week", "last month", "next month", "last year", "next year"))
_SENTENCE_END = frozenset(".!?:")
# A capital and a lower-case letter, or a run of capitals ending a word; the
# rest of the entity test runs in Python on these few positions only.
_CAPITAL = re.compile(r"[A-Z](?:[a-z]|[A-Z]+(?!\w))")
FEATURES = (("number", 0.15), ("date", 0.15), ("entity", 0.15), ("event_time", 0.10), ("source", 0.10),
            ("metadata", 0.05))


def reserved_keys(metadata: Mapping[str, str]) -> list[str]:
    """Caller metadata keys that are reserved (leading "_"), sorted."""
    return sorted(k for k in metadata if k.startswith("_"))


def has_entity(text: str) -> bool:
    """An ASCII-capitalised word that does not open a sentence, or an all-capitals word of 2+ letters."""
    for m in _CAPITAL.finditer(text):
        i = m.start()
        if i and (text[i - 1].isalnum() or text[i - 1] == "_"):
            continue  # inside a word
        if m.end() - i > 1 and text[i + 1].isupper():
            return True  # an acronym
        j = i - 1
        while j >= 0 and text[j].isspace():
            j -= 1
        if j >= 0 and text[j] not in _SENTENCE_END:
            return True
    return False


def has_date(text: str, padded: str, number: bool) -> bool:
    """A weekday or relative-day phrase, or a numeric date (ISO, d/m/y, "mar 3", "3 march")."""
    if DATE_WORDS.find(padded) is not None:
        return True
    if not number:
        return False
    # Guards first (re is slow): numeric forms need "-" or "/", month forms a month word.
    if ("-" in text or "/" in text) and _SLASH_DASH_DATE.search(text):
        return True
    return any(f" {m}" in padded for m in _MONTHS) and _MONTH_DATE.search(fold(text)) is not None


def _reasons(found: Sequence[bool], metadata: Mapping[str, str]) -> tuple[str, ...]:
    names = [name for (name, _), f in zip(FEATURES, found, strict=True) if f]
    row = [f"specific: {', '.join(names)}" if names else "no specificity features"]
    reserved = reserved_keys(metadata) if metadata else []
    if reserved:
        row.append(f"reserved metadata keys ignored: {', '.join(reserved)}")
    return tuple(row)


def number_column(batch: Batch) -> np.ndarray:
    """(n,) mask: the candidate's sample holds a digit (ASCII samples read from the tokens index)."""
    number = token_index(batch).holding_digits()
    for i in np.flatnonzero(~short_ascii(batch)).tolist():
        number[i] = _NUMBER.search(sample(batch.contents[i])) is not None
    return number


def date_column(batch: Batch, number: np.ndarray) -> np.ndarray:
    """(n,) mask: ``has_date`` of each candidate's sample, given ``number_column``."""
    date = DATE_WORDS.first_found(padded_index(batch)) >= 0
    for i in np.flatnonzero(number & ~date).tolist():
        text = sample(batch.contents[i])
        date[i] = has_date(text, padded_words(text), True)
    return date


def confidence(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """Base 0.30 plus a bonus per specificity feature present (module docstring).

    Weekday and relative-day words come from the batch's padded-words index; digits of ASCII
    samples from its tokens index (a digit is a word character); the numeric-date patterns run
    only on memories with a digit, the entity test on memories with a capital letter.
    """
    n = batch.n
    number = number_column(batch)
    date = date_column(batch, number)
    entity = np.fromiter((c.lower() != c and has_entity(sample(c)) for c in batch.contents), dtype=bool, count=n)
    event_time = ~np.isnan(batch.event_time)
    source = np.isin(batch.source, (Source.UNSPECIFIED, Source.UNKNOWN), invert=True)
    metadata = np.fromiter((any(not k.startswith("_") for k in m) for m in batch.metadata), dtype=bool, count=n)
    found = np.stack([number, date, entity, event_time, source, metadata], axis=1)
    bonus = np.zeros(n)
    for j, (_, weight) in enumerate(FEATURES):  # one at a time, in feature order: the last bit depends on it
        bonus = bonus + np.where(found[:, j], weight, 0.0)
    values = np.minimum(BASE + bonus, 1.0)
    return RawSignal(values, Lazy(n, lambda i: _reasons(found[i].tolist(), batch.metadata[i])))
