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
from memrank.core.profile import Profile
from memrank.core.reasons import Lazy
from memrank.core.signals.base import RawSignal, ScoringContext
from memrank.core.signals.importance import CONSTRAINT_PREF, DECISION_FACT
from memrank.core.text.buffers import padded_index, short_ascii, token_index
from memrank.core.text.phrases import Phrases
from memrank.core.text.words import count_tokens, is_pleasantry, sample

DURABLE_KINDS = frozenset({"fact", "preference", "decision", "constraint", "profile", "identity", "correction"})
DURABLE = CONSTRAINT_PREF + DECISION_FACT
TIME_BOUND = Phrases(("today", "tonight", "right now", "at the moment", "currently", "this morning",
                      "this afternoon", "this evening", "just now"))
SHORT_TOKENS = 4
LONG_TOKENS = 12


def stability(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """Per-memory stability from its wording, length and kind (module docstring)."""
    n = batch.n
    index = padded_index(batch)
    tokens_index = token_index(batch)
    plain = short_ascii(batch)  # ASCII: the tokens index counts exactly count_tokens' words
    counts = np.minimum(tokens_index.counts, LONG_TOKENS)
    for i in np.flatnonzero(~plain).tolist():
        counts[i] = count_tokens(sample(batch.contents[i]), LONG_TOKENS)
    pleasantry = np.fromiter(map(is_pleasantry, batch.contents), dtype=bool, count=n)
    durable_kind = np.fromiter((k.lower() in DURABLE_KINDS for k in batch.kinds), dtype=bool, count=n)
    durable = np.where(durable_kind, -1, DURABLE.first_found(index, ~durable_kind))  # -1: by kind (or none)
    has_durable = durable_kind | (durable >= 0)
    bound = TIME_BOUND.first_found(index)
    short = counts < SHORT_TOKENS
    values = np.where(counts < LONG_TOKENS, 0.6, 0.7) + np.where(has_durable, 0.3, 0.0) - np.where(bound >= 0, 0.2, 0.0)
    values = np.clip(values, 0.0, 1.0)
    values = np.where(short, 0.3, values)
    values = np.where(pleasantry, 0.1, values)
    kinds = batch.kinds

    def why(i: int) -> tuple[str, ...]:
        if pleasantry[i]:
            return ("pleasantry only: 0.1",)
        count = int(counts[i])
        if short[i]:
            return (f"very short ({count} tokens): 0.3",)
        value = 0.6 if count < LONG_TOKENS else 0.7
        reasons = [f"{'at least ' if count == LONG_TOKENS else ''}{count} tokens: {value:g}"]
        if has_durable[i]:
            what = f"kind {kinds[i]}" if durable_kind[i] else DURABLE.ordered[int(durable[i])]
            reasons.append(f"durable ({what}): +0.3")
        if bound[i] >= 0:
            reasons.append(f"time-bound ({TIME_BOUND.ordered[int(bound[i])]}): -0.2")
        return tuple(reasons)

    return RawSignal(values, Lazy(n, why))
