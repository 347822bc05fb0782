"""The signal registry: every signal by name, each a pure function over the batch columns.

Each function has the signature ``(batch, ctx, profile, population) ->
RawSignal`` (see ``base``). ``get_signal`` raises ``ConfigError`` naming an
unknown signal.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from memrank.core.errors import ConfigError
from memrank.core.signals import (
    access,
    confidence,
    context,
    date,
    freshness,
    hop,
    importance_cues,
    kind_prior,
    length,
    lexical,
    recency,
    relevance,
    reranker,
    safety,
    speaker,
    speaker_crowd,
    stability,
    statement,
    substring,
    thread,
    trust,
)
from memrank.core.signals.base import RawSignal, SignalFn

__all__ = ["SIGNALS", "RawSignal", "SignalFn", "get_signal"]

SIGNALS: Mapping[str, SignalFn] = MappingProxyType({
    "relevance": relevance.relevance,
    "retrieval": relevance.retrieval,
    "reranker": reranker.reranker,
    "lexical": lexical.lexical,
    "context": context.context,
    "speaker": speaker.speaker,
    "speaker_pair": speaker_crowd.speaker_pair,
    "speaker_crowd": speaker_crowd.speaker_crowd,
    "thread": thread.thread,
    "hop": hop.hop,
    "length": length.length,
    "statement": statement.statement,
    "date": date.date,
    "substring_match": substring.substring_match,
    "recency": recency.recency,
    "importance": importance_cues.importance,
    "kind_prior": kind_prior.kind_prior,
    "access": access.access,
    "access_log": access.access_log,
    "trust": trust.trust,
    "confidence": confidence.confidence,
    "stability": stability.stability,
    "freshness": freshness.freshness,
    "safety": safety.safety,
})


def get_signal(name: str) -> SignalFn:
    """The signal function registered under name."""
    try:
        return SIGNALS[name]
    except KeyError:
        raise ConfigError(f"unknown signal {name!r} (known: {', '.join(sorted(SIGNALS))})") from None
