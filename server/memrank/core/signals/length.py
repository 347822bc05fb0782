"""Length: how much a memory says, on a log scale that saturates.

A one-line reply ("Thanks!", "Sounds great") rarely answers a question; the
turn that does usually says more. The signal is the memory's token count as
the pipeline budgets it (``token_count``, or ceil(characters / 4) where the
caller sent none) on a log scale, full at ``FULL_TOKENS``::

    length = min(1, ln(1 + tokens) / ln(1 + FULL_TOKENS))

in [0, 1]: 0 tokens give 0, 14 tokens 0.51, 200 tokens and more give 1.
Memories cut to the same size (session summaries of a fixed length) all get
the same value, and a profile with ``share_constant_weight`` then gives the
weight to the others.
"""

from __future__ import annotations

import math

import numpy as np

from memrank.core.batch import Batch
from memrank.core.profile import Profile
from memrank.core.reasons import Lazy
from memrank.core.signals.base import RawSignal, ScoringContext
from memrank.core.text.words import estimated_tokens

FULL_TOKENS = 200


def token_counts(batch: Batch) -> np.ndarray:
    """token_count where set, else ceil(characters / 4), as int64."""
    sent = batch.token_count.astype(np.int64)
    if np.count_nonzero(sent > 0) == sent.size:
        return sent
    chars = np.fromiter(map(len, batch.contents), dtype=np.int64, count=batch.n)
    return np.where(sent > 0, sent, estimated_tokens(chars))


def length(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """ln(1 + tokens) / ln(1 + FULL_TOKENS), at most 1."""
    tokens = token_counts(batch)
    values = np.minimum(1.0, np.log1p(tokens.astype(np.float64)) / math.log1p(FULL_TOKENS))
    sent = batch.token_count
    return RawSignal(values, Lazy(batch.n, lambda i: (
        f"{int(tokens[i])} tokens{'' if sent[i] > 0 else ' (estimated from characters)'}"
        f" (full at {FULL_TOKENS})",)))
