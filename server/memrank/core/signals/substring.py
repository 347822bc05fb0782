"""The agent-observer task-word match, reproducing the Go ``scoreMemory`` exactly.

    words = strings.Fields(strings.ToLower(task))
    hits  = count of w in words with len(w) >= 3 (UTF-8 bytes) and
            strings.Contains(strings.ToLower(content), w)
    value = hits / len(words), or 0 when there are no words

Flaws kept on purpose: a substring is not a token ("log" matches "dialog"),
stop words count, every word weighs the same, repeated task words count
each time, and short words (< 3 bytes) still count in the denominator.
The whole content is searched (no head/tail sample), as in Go.

Lower-casing uses Python's ``str.lower()``; it differs from Go's
``strings.ToLower`` for a few characters (Python applies the full Unicode
mappings: "İ" becomes "i̇" with a combining dot where Go gives "i", and a
word-final capital sigma becomes "ς" where Go gives "σ"). Splitting follows
Go's ``unicode.IsSpace`` exactly (``text.go_fields``).
"""

from __future__ import annotations

import numpy as np

from memrank.core.batch import Batch
from memrank.core.scores import ScoringContext
from memrank.core.signals.base import RawSignal, same_reason
from memrank.core.text import go_fields
from memrank.profiles.model import Profile

MIN_WORD_BYTES = 3


def task_words(query: str) -> list[str]:
    """Task words as the Go scorer sees them: Fields of the lower-cased query."""
    return go_fields(query.lower())


def _hits(lowered: str, words: list[str]) -> int:
    return sum(w in lowered for w in words)


def substring_match(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """Share of task words (>= 3 UTF-8 bytes) found as substrings of the lower-cased content."""
    words = task_words(ctx.query)
    if not words:
        return RawSignal(np.zeros(batch.n), same_reason(batch.n, "no task words: 0"))
    candidates = [w for w in words if len(w.encode("utf-8", "surrogatepass")) >= MIN_WORD_BYTES]
    hits = np.array([_hits(content.lower(), candidates) for content in batch.contents], dtype=np.float64)
    values = hits / len(words)
    reasons = tuple((f"{int(h)} of {len(words)} task words found as substrings",) for h in hits.tolist())
    return RawSignal(values, reasons)
