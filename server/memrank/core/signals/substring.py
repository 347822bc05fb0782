"""The agent-observer task-word match, reproducing the Go ``scoreMemory`` exactly.

    words = strings.Fields(strings.ToLower(task))
    hits  = count of w in words with len(w) >= 3 (UTF-8 bytes) and
            strings.Contains(strings.ToLower(content), w)
    value = hits / len(words), or 0 when there are no words

Flaws kept on purpose: a substring is not a token ("log" matches "dialog"),
stop words count, every word weighs the same, repeated task words count
each time, and short words (< 3 bytes) still count in the denominator.
The whole content is searched (no head/tail sample), as in Go.

Lower-casing, splitting and matching are Go's (``text.golang``): each code
point lower-cased by itself ("İ" gives "i", a word-final "Σ" gives "σ"),
fields split on ``unicode.IsSpace``, and a match is a byte match of UTF-8
(on valid UTF-8, the same as a match of code points). A lone surrogate, which
only a Python caller of the core can send, counts as U+FFFD, as in Go.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from memrank.core.batch import Batch
from memrank.core.profile import Profile
from memrank.core.reasons import Lazy
from memrank.core.signals.base import RawSignal, ScoringContext, same_reason
from memrank.core.text.buffers import ascii_joined
from memrank.core.text.golang import fields, lower_utf8, to_lower

MIN_WORD_BYTES = 3
_LOW = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)  # the low k bytes of a uint64 chunk


def task_words(query: str) -> list[str]:
    """Task words as the Go scorer sees them: Fields of the lower-cased query."""
    return fields(to_lower(query))


def substring_match(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """Share of task words (>= 3 UTF-8 bytes) found as substrings of the lower-cased content."""
    words = task_words(ctx.query)
    if not words:
        return RawSignal(np.zeros(batch.n), same_reason(batch.n, "no task words: 0"))
    candidates = [w for w in words if len(w.encode("utf-8")) >= MIN_WORD_BYTES]  # to_lower left no surrogate
    hits = _column_hits(batch.contents, candidates, ascii_joined(batch))
    values = hits / len(words)
    return RawSignal(values, Lazy(batch.n, lambda i: (f"{int(hits[i])} of {len(words)} task words found as "
                                                      "substrings",)))


def _column_hits(contents: tuple[str, ...], words: list[str],
                 joined: tuple[bytes, np.ndarray] | None = None) -> np.ndarray:
    """Per content, how many of the words occur in its text lower-cased as Go does (a word counts each time
    it is listed).

    The lower-cased contents (``golang.lower_utf8``) are joined by spaces into one UTF-8 buffer, searched
    once per distinct word with numpy: the positions where the word's first two bytes stand, narrowed by
    comparing its bytes 8 at a time, then mapped to the content that holds them. UTF-8 is self-synchronising,
    so a byte match of a word is a match of its characters; a task word holds no space (it is a field of the
    task), so no match spans two contents. A word that does hold a space is searched with ``in``.

    ``joined``, when given, is the contents already joined by spaces as ASCII bytes with each one's offset
    (``text.buffers.ascii_joined``); it is lower-cased here.
    """
    n = len(contents)
    hits = np.zeros(n)
    if not n or not words:
        return hits
    if joined is not None:  # lower-casing ASCII is byte by byte: the joined text lower-cased at once
        buf, starts = joined[0].lower(), joined[1]
    else:
        text = " ".join(contents)
        if text.isascii():
            buf = text.lower().encode("ascii")
            lengths = np.fromiter(map(len, contents), dtype=np.int64, count=n)
        else:  # each content alone: lower-casing can change a character's length in bytes ("İ" 2, "i" 1)
            parts = [lower_utf8(c) for c in contents]
            buf = b" ".join(parts)
            lengths = np.fromiter(map(len, parts), dtype=np.int64, count=n)
        starts = np.zeros(n, dtype=np.int64)
        np.cumsum(lengths[:-1] + 1, out=starts[1:])
    size = len(buf)
    padded = np.frombuffer(buf + bytes(8), dtype=np.uint8)  # 8 spare bytes: a chunk exists at every offset
    pairs = np.ndarray(shape=(size,), dtype="<u2", buffer=padded, strides=(1,)).copy()  # contiguous: fast ==
    chunks = np.ndarray(shape=(size,), dtype="<u8", buffer=padded, strides=(1,))
    for word, times in Counter(words).items():
        raw = word.encode("utf-8", "surrogatepass")
        if not raw:
            hits += times  # "" is in every string
            continue
        if b" " in raw:
            lowered = [to_lower(c) for c in contents]
            hits += times * np.fromiter([word in c for c in lowered], dtype=np.float64, count=n)
            continue
        at = np.flatnonzero(pairs == int.from_bytes(raw[:2], "little") if len(raw) >= 2 else padded[:size] == raw[0])
        at = at[at <= size - len(raw)]
        for offset in range(0, len(raw), 8):
            if not at.size:
                break
            part = raw[offset:offset + 8]
            at = at[(chunks[at + offset] & _LOW[len(part)]) == np.uint64(int.from_bytes(part, "little"))]
        if at.size:
            holds = np.zeros(n, dtype=bool)
            holds[np.searchsorted(starts, at, side="right") - 1] = True
            hits += times * holds
    return hits
