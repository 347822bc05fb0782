"""Statement: a memory that asks a question rarely answers one.

In a conversation the turn that matches a question best is often another
question about the same thing ("Did you go to the support group?"), and the
answer is a statement. The signal is::

    statement = 0 if the memory's text, trailing white space removed, ends with a question mark, else 1

(``?``, the full-width ``？`` or the Arabic ``؟``), in {0, 1}. An empty
memory is a statement (it asks nothing). When every memory of a request is
one or the other, the signal is constant there and a profile with
``share_constant_weight`` gives its weight to the others.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memrank.core.batch import Batch
from memrank.core.features import memory_features
from memrank.core.profile import Profile
from memrank.core.reasons import Table
from memrank.core.signals.base import RawSignal, ScoringContext

QUESTION_MARKS = ("?", "\uff1f", "\u061f")
_REASONS = (("ends with a question mark: asks rather than answers",), ("a statement (no closing question mark)",))


def codes(contents: Sequence[str]) -> list[int]:
    """0 for a text ending with a question mark, else 1."""
    return [0 if c.rstrip().endswith(QUESTION_MARKS) else 1 for c in contents]


def statement(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """0 for a memory ending with a question mark, else 1."""
    found = codes(batch.contents) if ctx.features is None else memory_features(batch, ctx.features).statement.tolist()
    return RawSignal(np.asarray(found, dtype=np.float64), Table(found, _REASONS))
