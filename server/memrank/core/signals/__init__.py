"""The signal registry: every signal by name, each a pure function over the batch columns.

Each function has the signature ``(batch, ctx, profile, population) ->
RawSignal`` (see ``base``). ``get_signal`` raises ``ConfigError`` naming an
unknown signal.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from memrank.core.errors import ConfigError
from memrank.core.signals.access import access, access_log
from memrank.core.signals.base import RawSignal, SignalFn
from memrank.core.signals.confidence import confidence
from memrank.core.signals.context import context
from memrank.core.signals.date import date
from memrank.core.signals.freshness import freshness
from memrank.core.signals.hop import hop
from memrank.core.signals.importance_cues import importance
from memrank.core.signals.kind_prior import kind_prior
from memrank.core.signals.length import length
from memrank.core.signals.lexical import lexical
from memrank.core.signals.recency import recency
from memrank.core.signals.relevance import relevance, retrieval
from memrank.core.signals.safety import safety
from memrank.core.signals.speaker import speaker
from memrank.core.signals.stability import stability
from memrank.core.signals.statement import statement
from memrank.core.signals.substring import substring_match
from memrank.core.signals.thread import thread
from memrank.core.signals.trust import trust

__all__ = ["SIGNALS", "RawSignal", "SignalFn", "get_signal"]

SIGNALS: Mapping[str, SignalFn] = MappingProxyType({
    "relevance": relevance,
    "retrieval": retrieval,
    "lexical": lexical,
    "context": context,
    "speaker": speaker,
    "thread": thread,
    "hop": hop,
    "length": length,
    "statement": statement,
    "date": date,
    "substring_match": substring_match,
    "recency": recency,
    "importance": importance,
    "kind_prior": kind_prior,
    "access": access,
    "access_log": access_log,
    "trust": trust,
    "confidence": confidence,
    "stability": stability,
    "freshness": freshness,
    "safety": safety,
})


def get_signal(name: str) -> SignalFn:
    """The signal function registered under name."""
    try:
        return SIGNALS[name]
    except KeyError:
        raise ConfigError(f"unknown signal {name!r} (known: {', '.join(sorted(SIGNALS))})") from None
