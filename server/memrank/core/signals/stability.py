"""Stability: durable facts outlast greetings, thanks and short chatter.

    pleasantry only (greeting / thanks / acknowledgement)   0.1
    fewer than 4 word tokens                                0.3
    otherwise                                               0.6 (< 12 tokens) or 0.7
      + 0.3 if durable: a durable kind (fact, preference, decision,
        constraint, profile, identity, correction) or durable wording
        (preference, constraint, decision or identity phrases)
      - 0.2 if time-bound wording ("today", "right now", "at the moment", ...)

clipped to [0, 1].
"""

from __future__ import annotations

import re

import numpy as np

from memrank.core.batch import Batch
from memrank.core.scores import ScoringContext
from memrank.core.signals.base import RawSignal
from memrank.core.signals.importance import RULES
from memrank.core.text import is_pleasantry, sample, tokens
from memrank.profiles.model import Profile

DURABLE_KINDS = frozenset({"fact", "preference", "decision", "constraint", "profile", "identity", "correction"})
_DURABLE = tuple(p for name, _, _, p in RULES if name in ("constraint_pref", "decision_fact"))
_TIME_BOUND = re.compile(
    r"\b(?:today|tonight|right now|at the moment|currently|this (?:morning|afternoon|evening)|just now)\b",
    re.IGNORECASE,
)
SHORT_TOKENS = 4
LONG_TOKENS = 12


def stability_of(kind: str, content: str) -> tuple[float, tuple[str, ...]]:
    """(stability, reasons) of one memory."""
    text = sample(content)
    if is_pleasantry(text):
        return 0.1, ("pleasantry only: 0.1",)
    count = len(tokens(text))
    if count < SHORT_TOKENS:
        return 0.3, (f"very short ({count} tokens): 0.3",)
    value = 0.6 if count < LONG_TOKENS else 0.7
    reasons = [f"{count} tokens: {value:g}"]
    if kind.lower() in DURABLE_KINDS or any(p.search(text) for p in _DURABLE):
        value += 0.3
        reasons.append("durable kind or wording: +0.3")
    if _TIME_BOUND.search(text):
        value -= 0.2
        reasons.append("time-bound wording: -0.2")
    return min(1.0, max(0.0, value)), tuple(reasons)


def stability(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """Per-memory stability from its wording, length and kind."""
    pairs = [stability_of(k, c) for k, c in zip(batch.kinds, batch.contents, strict=True)]
    return RawSignal(np.array([v for v, _ in pairs], dtype=np.float64), tuple(r for _, r in pairs))
