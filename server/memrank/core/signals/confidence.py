"""Confidence as specificity: concrete memories are more trustworthy to act on.

    confidence = 0.30                       base
               + 0.15 if the sample has a number
               + 0.15 if it has a date (ISO or d/m/y, month + day, weekday, relative day)
               + 0.15 if it names an entity (an ASCII-capitalised word not opening
                 a sentence, or an acronym of 2+ capitals)
               + 0.10 if event_time is set
               + 0.10 if the source is known (not unset or unknown)
               + 0.05 if the caller sent metadata (reserved "_" keys ignored)

in [0.30, 1.0]. Reserved metadata keys (leading "_") are ignored and the
reasons say so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np

from memrank.core.batch import Batch
from memrank.core.scores import ScoringContext
from memrank.core.signals.base import RawSignal
from memrank.core.text import sample
from memrank.core.types import Source
from memrank.profiles.model import Profile

BASE = 0.30
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_NUMBER = re.compile(r"\d")
_DATE = re.compile(
    rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b\d{{1,2}}/\d{{1,2}}/\d{{2,4}}\b|\b{_MONTH} \d{{1,2}}\b|\b\d{{1,2}} {_MONTH}"
    r"|\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|yesterday|tomorrow)\b"
    r"|\b(?:last|next) (?:week|month|year)\b",
    re.IGNORECASE,
)
# A capitalised word after a word that does not end a sentence, or an acronym.
_ENTITY = re.compile(r"(?<=[\w,;)])[ \t]+[A-Z][a-z][\w'-]*|\b[A-Z]{2,}\b")
FEATURES = (("number", 0.15), ("date", 0.15), ("entity", 0.15), ("event_time", 0.10), ("source", 0.10),
            ("metadata", 0.05))


def reserved_keys(metadata: Mapping[str, str]) -> list[str]:
    """Caller metadata keys that are reserved (leading "_"), sorted."""
    return sorted(k for k in metadata if k.startswith("_"))


def _features(batch: Batch, i: int) -> dict[str, bool]:
    text = sample(batch.contents[i])
    meta = batch.metadata[i]
    return {
        "number": _NUMBER.search(text) is not None,
        "date": _DATE.search(text) is not None,
        "entity": _ENTITY.search(text) is not None,
        "event_time": not np.isnan(batch.event_time[i]),
        "source": int(batch.source[i]) not in (Source.UNSPECIFIED, Source.UNKNOWN),
        "metadata": any(not k.startswith("_") for k in meta),
    }


def confidence(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """Base 0.30 plus a bonus per specificity feature present."""
    values = np.full(batch.n, BASE)
    reasons: list[tuple[str, ...]] = []
    for i in range(batch.n):
        found = _features(batch, i)
        values[i] = BASE + sum(w for name, w in FEATURES if found[name])
        names = [name for name, _ in FEATURES if found[name]]
        row = [f"specific: {', '.join(names)}" if names else "no specificity features"]
        reserved = reserved_keys(batch.metadata[i])
        if reserved:
            row.append(f"reserved metadata keys ignored: {', '.join(reserved)}")
        reasons.append(tuple(row))
    return RawSignal(np.minimum(values, 1.0), tuple(reasons))
