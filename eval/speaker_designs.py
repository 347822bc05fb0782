"""Prototype speaker signals for ``eval/cv_speaker.py``: candidate designs, registered for the run only.

Each is a pure function like the core's signals, bounded in [0, 1], with a
reason per candidate. ``n`` is the number of distinct non-empty speakers in
the batch (a feature of the request, no state).

- ``speaker_inv``: speaker x min(1, 2 / n) (trust falls with the number of people talking);
- ``speaker_few_T`` / ``speaker_many_T``: speaker where n <= T / where n > T (two columns the fit weighs apart);
- ``about``: the query names the candidate's speaker *or* a person the query names (a batch speaker) is
  named in its content (the one addressed or talked about);
- ``mention``: only the second part, the content with a leading "<speaker>: " removed.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import memrank.core.signals as registry
from memrank.core.batch import Batch
from memrank.core.profile import Profile
from memrank.core.reasons import Same, Table
from memrank.core.signals.base import RawSignal, ScoringContext
from memrank.core.signals.speaker import name_words, named, speaker
from memrank.core.text.words import name_fold, sample, words

THRESHOLDS = (2, 3, 5, 8)


def distinct_speakers(batch: Batch) -> int:
    """Distinct non-empty speakers of the batch."""
    return len({s for s in batch.speakers if s})


def _scaled(factor: Callable[[int], float], label: str) -> Callable[..., RawSignal]:
    def fn(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
        base = speaker(batch, ctx, profile, population)
        n = distinct_speakers(batch)
        f = factor(n)
        return RawSignal(base.values * f, Same(batch.n, f"{label}: {n} speakers, x {f:.3g}"))
    return fn


def _named_words(batch: Batch, ctx: ScoringContext) -> set[str]:
    q = name_fold(sample(ctx.query))
    qw = frozenset(words(q))
    return {w for s in set(batch.speakers) if s and named(q, qw, s) for w in name_words(s) if w in qw}


def _mentions(batch: Batch, ctx: ScoringContext, strip: bool) -> np.ndarray:
    names = _named_words(batch, ctx)
    out = np.zeros(batch.n)
    if not names:
        return out
    for i, (text, who) in enumerate(zip(batch.contents, batch.speakers, strict=True)):
        if strip and who and text.startswith(f"{who}: "):
            text = text[len(who) + 2:]
        out[i] = 1.0 if names & set(words(name_fold(text))) else 0.0
    return out


def about(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """1 where the query names the speaker or the content names a person the query names."""
    base = speaker(batch, ctx, profile, population).values
    v = np.maximum(base, _mentions(batch, ctx, strip=False))
    return RawSignal(v, Table([int(x) for x in v], [("not about a named person",), ("about a named person",)]))


def mention(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """1 where the content (without its speaker prefix) names a person the query names."""
    v = _mentions(batch, ctx, strip=True)
    return RawSignal(v, Table([int(x) for x in v], [("names no named person",), ("names a named person",)]))


def prototypes() -> dict[str, Callable[..., RawSignal]]:
    """Every prototype by name."""
    out: dict[str, Callable[..., RawSignal]] = {
        "speaker_inv": _scaled(lambda n: min(1.0, 2.0 / n) if n else 1.0, "damped"),
        "about": about, "mention": mention}
    for t in THRESHOLDS:
        out[f"speaker_few_{t}"] = _scaled(lambda n, t=t: 1.0 if n <= t else 0.0, f"few <= {t}")
        out[f"speaker_many_{t}"] = _scaled(lambda n, t=t: 1.0 if n > t else 0.0, f"many > {t}")
    return out


def register() -> tuple[str, ...]:
    """Add the prototypes to the signal registry (this process only); their names."""
    from types import MappingProxyType

    protos = prototypes()
    registry.SIGNALS = MappingProxyType({**registry.SIGNALS, **protos})
    return tuple(protos)
