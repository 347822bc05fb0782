"""Stability and confidence equal one-memory references of their module docstrings (below), value and reasons."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from memrank.core.batch import CandidateInput, batch_from_rows
from memrank.core.signals import get_signal
from memrank.core.signals.base import ScoringContext
from memrank.core.signals.confidence import FEATURES, has_date, has_entity, reserved_keys
from memrank.core.signals.stability import DURABLE, DURABLE_KINDS, TIME_BOUND
from memrank.core.text.words import count_tokens, is_pleasantry, padded_words, sample
from memrank.core.types import Source
from memrank.profiles.builtin import BUILTIN_PROFILES

WORDS = sorted({w for p in (*DURABLE.items, *TIME_BOUND.items) for w in p.split()})
PIECES = [*WORDS, "Thanks!", "hi", "ok", "cool", "Monday", "yesterday", "last", "week", "3", "2024-05-01",
          "5/6/24", "Mar", "march", "12", "NASA", "Berlin", ".", "!", "\n", "  ", "İ", "café", "x_y", "٣",
          "Alex", "i", "the", "a", "b", "c"]
contents = (st.lists(st.sampled_from(PIECES), max_size=16).map(" ".join) | st.text(max_size=30)
            | st.builds(lambda w, k: " ".join([w] * k), st.sampled_from(["a", "Thanks", "2024"]), st.integers(200, 700))
            | st.builds(lambda c: " " * 3 + c + "  ", st.sampled_from(["thanks!", "hi there", "ok cool"])))
kinds = st.sampled_from(["", "fact", "Preference", "note", "IDENTITY"])
rows = st.lists(st.tuples(contents, kinds, st.booleans(), st.sampled_from([0, 1, 3, 5]),
                          st.sampled_from([{}, {"k": "v"}, {"_admit": "1"}, {"_trust": "x", "b": "y"}])),
                min_size=1, max_size=8)


def stability_of(kind: str, content: str) -> tuple[float, tuple[str, ...]]:
    """(stability, reasons) of one memory."""
    text = sample(content)
    if is_pleasantry(text):
        return 0.1, ("pleasantry only: 0.1",)
    count = count_tokens(text, 12)
    if count < 4:
        return 0.3, (f"very short ({count} tokens): 0.3",)
    value = 0.6 if count < 12 else 0.7
    reasons = [f"{'at least ' if count == 12 else ''}{count} tokens: {value:g}"]
    padded = padded_words(text)
    durable = f"kind {kind}" if kind.lower() in DURABLE_KINDS else DURABLE.find(padded)
    if durable:
        value += 0.3
        reasons.append(f"durable ({durable}): +0.3")
    bound = TIME_BOUND.find(padded)
    if bound:
        value -= 0.2
        reasons.append(f"time-bound ({bound}): -0.2")
    return min(1.0, max(0.0, value)), tuple(reasons)


def confidence_of(content: str, metadata: dict[str, str], event_time: bool,
                  source: bool) -> tuple[float, tuple[str, ...]]:
    """(confidence, reasons) of one memory."""
    text = sample(content)
    number = re.search(r"\d", text) is not None
    found = (number, has_date(text, padded_words(text), number), has_entity(text), event_time, source,
             any(not k.startswith("_") for k in metadata))
    bonus = 0.0
    for (_, weight), present in zip(FEATURES, found, strict=True):  # one addition at a time (sum() compensates)
        if present:
            bonus += weight
    names = [name for (name, _), f in zip(FEATURES, found, strict=True) if f]
    reasons = [f"specific: {', '.join(names)}" if names else "no specificity features"]
    if reserved_keys(metadata):
        reasons.append(f"reserved metadata keys ignored: {', '.join(reserved_keys(metadata))}")
    return 0.30 + bonus, tuple(reasons)


def _batch(data):  # type: ignore[no-untyped-def]
    return batch_from_rows([CandidateInput(id=f"m{i}", content=c, kind=k, event_time=1.0 if ev else None,
                                           source=src, metadata=meta)
                            for i, (c, k, ev, src, meta) in enumerate(data)])


@settings(max_examples=300, deadline=None)
@given(rows)
def test_stability_equals_stability_of(data) -> None:  # type: ignore[no-untyped-def]
    got = get_signal("stability")(_batch(data), ScoringContext("", 0.0), BUILTIN_PROFILES["default"], None)  # type: ignore[arg-type]
    for i, (content, kind, *_rest) in enumerate(data):
        value, reasons = stability_of(kind, content)
        assert (got.values[i], got.reasons[i]) == (value, reasons), (content, kind)


@settings(max_examples=300, deadline=None)
@given(rows)
def test_confidence_equals_confidence_of(data) -> None:  # type: ignore[no-untyped-def]
    got = get_signal("confidence")(_batch(data), ScoringContext("", 0.0), BUILTIN_PROFILES["default"], None)  # type: ignore[arg-type]
    for i, (content, _kind, ev, src, meta) in enumerate(data):
        known = src not in (Source.UNSPECIFIED, Source.UNKNOWN)
        value, reasons = confidence_of(content, meta, ev, known)
        assert got.values[i] == min(value, 1.0), content
        assert got.reasons[i] == reasons, content
