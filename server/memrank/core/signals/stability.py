"""Stability: durable facts outlast greetings, thanks and short chatter.

    pleasantry only (greeting / thanks / acknowledgement)   0.1
    fewer than 4 word tokens                                0.3
    otherwise                                               0.6 (< 12 tokens) or 0.7
      + 0.3 if durable: a durable kind (fact, preference, decision,
        constraint, profile, identity, correction) or a constraint,
        preference, decision or identity phrase of the importance rules
      - 0.2 if time-bound wording ("today", "right now", "at the moment", ...)

clipped to [0, 1].
"""

from __future__ import annotations

import numpy as np

from memrank.core.batch import Batch
from memrank.core.phrases import Phrases, batch_word_sets, batch_words, words
from memrank.core.scores import ScoringContext
from memrank.core.signals.base import RawSignal
from memrank.core.signals.importance import CONSTRAINT_PREF, DECISION_FACT
from memrank.core.text import count_tokens, is_pleasantry, sample
from memrank.profiles.model import Profile

DURABLE_KINDS = frozenset({"fact", "preference", "decision", "constraint", "profile", "identity", "correction"})
DURABLE = CONSTRAINT_PREF + DECISION_FACT
TIME_BOUND = Phrases(("today", "tonight", "right now", "at the moment", "currently", "this morning",
                      "this afternoon", "this evening", "just now"))
SHORT_TOKENS = 4
LONG_TOKENS = 12


def stability_of(kind: str, content: str, padded: str | None = None,
                 present: frozenset[str] | None = None) -> tuple[float, tuple[str, ...]]:
    """(stability, reasons) of one memory."""
    text = sample(content)
    if is_pleasantry(text):
        return 0.1, ("pleasantry only: 0.1",)
    count = count_tokens(text, LONG_TOKENS)
    if count < SHORT_TOKENS:
        return 0.3, (f"very short ({count} tokens): 0.3",)
    value = 0.6 if count < LONG_TOKENS else 0.7
    reasons = [f"{'at least ' if count == LONG_TOKENS else ''}{count} tokens: {value:g}"]
    padded = words(text) if padded is None else padded
    durable = f"kind {kind}" if kind.lower() in DURABLE_KINDS else DURABLE.find(padded, present)
    if durable:
        value += 0.3
        reasons.append(f"durable ({durable}): +0.3")
    bound = TIME_BOUND.find(padded, present)
    if bound:
        value -= 0.2
        reasons.append(f"time-bound ({bound}): -0.2")
    return min(1.0, max(0.0, value)), tuple(reasons)


def stability(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """Per-memory stability from its wording, length and kind."""
    padded = batch_words(batch)
    sets = batch_word_sets(batch)
    pairs = [stability_of(k, c, w, p) for k, c, w, p in zip(batch.kinds, batch.contents, padded, sets, strict=True)]
    return RawSignal(np.array([v for v, _ in pairs], dtype=np.float64), tuple(r for _, r in pairs))
