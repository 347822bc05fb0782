"""Slow, per-candidate reference ports written straight from the reference formulas.

They deliberately share no code with ``memrank.core``: plain Python loops,
``math`` and ``hmac`` only, so a test comparing memrank with them compares
two independent derivations. The benchmark reuses them as the naive baseline.
"""

from __future__ import annotations

import hashlib
import hmac
import math
from collections.abc import Sequence
from dataclasses import dataclass

# Go's kind prior table (case-sensitive keys).
GO_KIND_PRIOR = {"decision": 0.35, "fact": 0.30, "preference": 0.25, "failure": 0.20, "attempt": 0.05}

# Go's unicode.IsSpace: the Latin-1 spaces plus the Unicode White_Space property.
GO_SPACE = frozenset(
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def go_fields(s: str) -> list[str]:
    """strings.Fields: split on runs of unicode.IsSpace characters."""
    words: list[str] = []
    current: list[str] = []
    for ch in s:
        if ch in GO_SPACE:
            if current:
                words.append("".join(current))
                current = []
        else:
            current.append(ch)
    if current:
        words.append("".join(current))
    return words


def go_lower(s: str) -> str:
    """strings.ToLower: unicode.ToLower per code point (the simple mapping, no final sigma), read from
    Python's table one character at a time; the one character whose full mapping is longer is "İ" (Go: "i").
    A lone surrogate is U+FFFD, as Go writes a code point with no UTF-8 form."""
    if s.isascii():
        return s.lower()
    out = []
    for ch in s:
        if "\ud800" <= ch <= "\udfff":
            out.append("\ufffd")
        elif ch == "\u0130":
            out.append("i")
        else:
            out.append(ch.lower())  # one character alone: no final-sigma context
    return "".join(out)


def agent_observer_score(task: str, kind: str, content: str, retrieval_score: float, access_count: int) -> float:
    """The Go scoreMemory, one memory at a time."""
    score = GO_KIND_PRIOR.get(kind, 0.0)
    score += 0.30 * retrieval_score
    words = go_fields(go_lower(task))
    if len(words) > 0:
        lowered = go_lower(content)
        matched = 0
        for w in words:
            if len(w.encode("utf-8")) >= 3 and w in lowered:
                matched += 1
        score += 0.25 * matched / len(words)
    if access_count > 0:
        score += min(access_count / 50, 0.10)
    return score


@dataclass(frozen=True)
class GAMemory:
    """What the generative-agents formula reads of a memory."""

    retrieval_score: float
    importance: float
    created_at: float | None = None
    last_accessed_at: float | None = None


def _min_max(xs: list[float]) -> list[float]:
    lo, hi = min(xs), max(xs)
    if hi == lo:
        return [0.5 for _ in xs]
    return [(x - lo) / (hi - lo) for x in xs]


def ga_recency(m: GAMemory, reference_time: float, decay: float = 0.995) -> float:
    """decay ** hours since last access (else creation); future = 0 h; no time = 0."""
    t = m.last_accessed_at if m.last_accessed_at is not None else m.created_at
    if t is None:
        return 0.0
    hours = max(0.0, (reference_time - t) / 3600.0)
    return math.pow(decay, hours)


def generative_agents_scores(memories: Sequence[GAMemory], reference_time: float) -> list[float]:
    """recency + importance + relevance, each min-max normalised over the memories, weights 1."""
    if not memories:
        return []
    recency = _min_max([ga_recency(m, reference_time) for m in memories])
    importance = _min_max([m.importance for m in memories])
    relevance = _min_max([m.retrieval_score for m in memories])
    return [1.0 * r + 1.0 * i + 1.0 * v for r, i, v in zip(recency, importance, relevance, strict=True)]


def tie_sorted_ids(ids: Sequence[str], finals: Sequence[float], event_times: Sequence[float | None],
                   ingested: Sequence[float | None]) -> list[str]:
    """Ids by final desc, event time desc, ingestion time desc, id asc (unset times oldest)."""
    def key(i: int) -> tuple[float, float, float, str]:
        ev, ing = event_times[i], ingested[i]
        return (-finals[i], -ev if ev is not None else math.inf, -ing if ing is not None else math.inf, ids[i])
    return [ids[i] for i in sorted(range(len(ids)), key=key)]


def lexical_idf_score(query_terms: Sequence[str], doc_terms: Sequence[set[str]], population: Sequence[bool],
                      i: int) -> float:
    """Smoothed-IDF share of the query terms found in document i."""
    n_pop = sum(population)
    total = found = 0.0
    for t in query_terms:
        df = sum(1 for d, p in zip(doc_terms, population, strict=True) if p and t in d)
        idf = math.log((1 + n_pop) / (1 + df)) + 1
        total += idf
        if t in doc_terms[i]:
            found += idf
    return found / total if total else 0.0


def provenance_proof(key: bytes, id: str, source: int, content: str) -> str:
    """The documented canonical provenance HMAC."""
    digest = hashlib.sha256(content.encode("utf-8")).hexdigest()
    message = f"memrank-provenance-v1\n{id}\n{source}\n{digest}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()
