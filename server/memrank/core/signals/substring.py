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

from collections import Counter

import numpy as np

from memrank.core.batch import Batch
from memrank.core.reasons import Lazy
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
    hits = _column_hits(batch.contents, candidates)
    values = hits / len(words)
    return RawSignal(values, Lazy(batch.n, lambda i: (f"{int(hits[i])} of {len(words)} task words found as "
                                                      "substrings",)))


def _column_hits(contents: tuple[str, ...], words: list[str]) -> np.ndarray:
    """Per content, how many of the words occur in its lower-cased text (a word counts each time it is listed).

    Word by word over the column (each distinct word once, weighted by how often the task lists it): one
    ``in`` per content and distinct word, with no Python loop over the task words inside each content.
    """
    n = len(contents)
    lowered = [c.lower() for c in contents]
    hits = np.zeros(n)
    for word, times in Counter(words).items():
        hits += times * np.fromiter([word in c for c in lowered], dtype=np.float64, count=n)
    return hits
