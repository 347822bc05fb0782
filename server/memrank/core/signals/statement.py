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

import numpy as np

from memrank.core.batch import Batch
from memrank.core.profile import Profile
from memrank.core.reasons import Table
from memrank.core.signals.base import RawSignal, ScoringContext
from memrank.core.text.buffers import ascii_joined

QUESTION_MARKS = ("?", "\uff1f", "\u061f")
_REASONS = (("ends with a question mark: asks rather than answers",), ("a statement (no closing question mark)",))
# Up to this many memories each is read in Python; more, the last characters of ASCII contents are read at once.
TINY_BATCH = 8
_SPACE = np.array([chr(b).isspace() for b in range(256)])  # what str.rstrip strips, as ASCII bytes


def _asks(content: str) -> bool:
    return content.rstrip().endswith(QUESTION_MARKS)


def statement(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """0 for a memory ending with a question mark, else 1."""
    joined = ascii_joined(batch) if batch.n > TINY_BATCH else None
    if joined is None:
        codes = [0 if _asks(c) else 1 for c in batch.contents]
        return RawSignal(np.asarray(codes, dtype=np.float64), Table(codes, _REASONS))
    # ASCII contents joined by single spaces: each one's last byte is the byte before the next one's start.
    # An ASCII question mark is "?" alone; a content ending in white space (or empty) is read in Python.
    text, starts = joined
    ends = np.append(starts[1:] - 1, len(text))
    last = np.frombuffer(text, dtype=np.uint8).take(np.maximum(ends - 1, 0))
    asks = last == ord("?")
    for i in np.flatnonzero(_SPACE[last] | (ends == starts)).tolist():
        asks[i] = _asks(batch.contents[i])
    values = np.logical_not(asks).astype(np.float64)
    return RawSignal(values, Table(values.astype(np.int64), _REASONS))
