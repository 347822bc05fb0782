"""Speaker: the query names who said the memory (or whom it is about).

Questions about a conversation name people ("What did Caroline research?"),
and the memories that answer them are usually that person's own words. A
candidate's ``speaker`` (a person's or agent's name, any script) is split
into name words: Unicode ``\\w+`` runs of its folded form (NFKD, combining
marks removed, case-folded, so "José" matches "jose" and "ŁUKASZ" matches
"łukasz"), without English stop words and one-character words. The signal is::

    speaker = 1 if some name word occurs in the folded query, else 0

A name word occurs when it is one of the query's words; a word in a script
written without spaces (Chinese, Japanese, Thai: any character that is a
letter with no case) also occurs as a substring ("王伟说了什么" names "王伟").
0 for a candidate without a speaker and for an empty query. The query is read
through the same head/tail sample as the lexical signal.
"""

from __future__ import annotations

import unicodedata

import numpy as np

from memrank.core.batch import Batch
from memrank.core.profile import Profile
from memrank.core.reasons import Same, Table
from memrank.core.signals.base import RawSignal, ScoringContext
from memrank.core.text.words import STOP_WORDS, name_fold, sample, words


def name_words(name: str) -> tuple[str, ...]:
    """The words of a folded name that can identify it (no stop words, at least two characters)."""
    return tuple(dict.fromkeys(w for w in words(name_fold(name)) if len(w) >= 2 and w not in STOP_WORDS))


def _unspaced(word: str) -> bool:
    """True for a word with a caseless letter (scripts written without spaces between words)."""
    return any(unicodedata.category(c) == "Lo" for c in word)


def named(query_folded: str, query_words: frozenset[str], name: str) -> str:
    """The first name word of ``name`` that the query names, or "" when none does."""
    for w in name_words(name):
        if w in query_words or (_unspaced(w) and w in query_folded):
            return w
    return ""


def speaker(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """1 where the query names the candidate's speaker, else 0."""
    if batch.n == 0 or not any(batch.speakers):
        return RawSignal(np.zeros(batch.n), Same(batch.n, "no speaker"))
    q = name_fold(sample(ctx.query))
    query_words = frozenset(words(q))
    index: dict[str, int] = {}
    code = [index.setdefault(s, len(index)) for s in batch.speakers]
    distinct = list(index)
    hits = [named(q, query_words, s) if s else "" for s in distinct]
    values = np.array([1.0 if h else 0.0 for h in hits], dtype=np.float64)[np.array(code, dtype=np.int64)]
    table = [("no speaker",) if not s else (f"the query names speaker {s!r}",) if h
             else (f"the query does not name speaker {s!r}",) for s, h in zip(distinct, hits, strict=True)]
    return RawSignal(values, Table(code, table))
