"""Importance by cues: memrank's rules for the lians-* profiles (``importance_rules: cues``).

The seed names importance as "caller importance plus durable fact, decision, metric, date, constraint, and
evidence signals" and gives no rule text; these are memrank's own rules for those six cues, each with its
value v (``CUES``; the table of what counts is in docs/concepts/signals.md)::

    importance = b + (1 - b) x c,    c = 1 - prod over the cues found of (1 - v)

b is the caller's importance clipped to [0, 1], 0 when unset; each cue counts once. So importance stays in
[b, 1], a caller's 1 stays 1 and no cue leaves b exactly. The fact, decision and constraint phrases are the
category rules' own lists (``importance``), so one wording means the same in both rule sets. The reasons give
b, every cue found with what matched, a fact cue withheld for time-bound wording, and the formula.
"""

from __future__ import annotations

import re

import numpy as np

from memrank.core.batch import Batch
from memrank.core.profile import Profile
from memrank.core.reasons import Lazy
from memrank.core.signals.base import RawSignal, ScoringContext
from memrank.core.signals.confidence import DATE_WORDS, date_column, number_column
from memrank.core.signals.importance import CONSTRAINT_PREF, DECISION, FACT
from memrank.core.signals.importance import importance as category_importance
from memrank.core.signals.stability import TIME_BOUND
from memrank.core.text.buffers import padded_index
from memrank.core.text.phrases import Phrases
from memrank.core.text.words import fold, sample

CUES = (("fact", 0.25), ("decision", 0.30), ("metric", 0.15), ("date", 0.15), ("constraint", 0.30),
        ("evidence", 0.15))
EVIDENCE = Phrases(("according to", "confirmed", "verified", "measured", "benchmarked", "logs show", "log shows",
                    "data shows", "as shown", "reproduced", "screenshot", "citation", "proof", "evidence", "http",
                    "https", "www"))
KINDS = {"fact": frozenset({"fact", "profile", "identity"}), "decision": frozenset({"decision"}),
         "constraint": frozenset({"constraint", "preference"}), "evidence": frozenset({"evidence", "observation"})}
PHRASES = {"fact": FACT, "decision": DECISION, "constraint": CONSTRAINT_PREF, "evidence": EVIDENCE}
UNITS = ("percent", "ms", "s", "sec", "secs", "second", "seconds", "min", "mins", "minute", "minutes", "h", "hr",
         "hrs", "hour", "hours", "day", "days", "week", "weeks", "month", "months", "year", "years", "kb", "mb", "gb",
         "tb", "k", "x", "km", "kg", "lb", "lbs", "mile", "miles", "mph", "usd", "eur", "dollar", "dollars", "euro",
         "euros", "user", "users", "request", "requests", "rps", "qps", "times")
METRIC = re.compile(rf"[$€£¥]\s?\d+(?:[.,]\d+)*|(?<![\w.,])\d+(?:[.,]\d+)*\s?(?:%|(?:{'|'.join(UNITS)})(?!\w))")


def metric_of(content: str) -> str | None:
    """The first number with a unit (or currency sign) in the folded sample, as written, or None."""
    found = METRIC.search(fold(sample(content)))
    return found.group() if found else None


def importance(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """The importance signal under the profile's ``importance_rules``: ``cues`` here, else the category rules."""
    if profile.importance_rules == "cues":
        return cue_importance(batch)
    return category_importance(batch, ctx, profile, population)


def cue_importance(batch: Batch) -> RawSignal:
    """b + (1 - b) x (1 - prod(1 - v)) over the cues found (module docstring), column-wise."""
    n = batch.n
    index = padded_index(batch)
    kinds = [k.lower() for k in batch.kinds]
    given = ~np.isnan(batch.importance)
    base = np.clip(np.where(given, batch.importance, 0.0), 0.0, 1.0)  # as nan_to_num then clip, in fewer calls
    by_kind = {name: np.fromiter((k in KINDS[name] for k in kinds), dtype=bool, count=n) for name in PHRASES}
    phrase_at = {name: p.first_found(index, ~by_kind[name]) for name, p in PHRASES.items()}
    found = {name: by_kind[name] | (phrase_at[name] >= 0) for name in PHRASES}
    bound = TIME_BOUND.first_found(index)
    withheld = found["fact"] & (bound >= 0)  # durable facts only
    found["fact"] = found["fact"] & ~withheld
    number = number_column(batch)
    metrics = {i: metric_of(batch.contents[i]) for i in np.flatnonzero(number).tolist()}  # a digit is needed
    found["metric"] = np.zeros(n, dtype=bool)
    found["metric"][[i for i, m in metrics.items() if m is not None]] = True
    found["date"], date_at = date_column(batch, number), DATE_WORDS.first_found(index)
    keep = np.ones(n)
    for name, v in CUES:  # multiplied in CUES order (the derivations follow it)
        keep = keep * np.where(found[name], 1.0 - v, 1.0)
    values = np.minimum(base + (1.0 - base) * (1.0 - keep), 1.0)  # the min only guards the last bit
    shown, result = base.tolist(), values.tolist()

    def matched(name: str, i: int) -> str:
        if name == "metric":
            return f'"{metrics[i]}"'
        if name == "date":
            return f'"{DATE_WORDS.ordered[int(date_at[i])]}"' if date_at[i] >= 0 else "a numeric or month date"
        return f"kind {kinds[i]}" if by_kind[name][i] else f'"{PHRASES[name].ordered[int(phrase_at[name][i])]}"'

    def why(i: int) -> tuple[str, ...]:
        b = shown[i]
        row = [f"caller importance {b:g}" if given[i] else "no caller importance: 0"]
        if withheld[i]:
            row.append(f'no fact cue: time-bound ("{TIME_BOUND.ordered[int(bound[i])]}")')
        cues = [(name, v) for name, v in CUES if found[name][i]]
        row += [f"cue {name} {v:g} ({matched(name, i)})" for name, v in cues]
        if not cues:
            return (*row, f"no importance cue: {result[i]:g}")
        factors = " x ".join(f"(1 - {v:g})" for _, v in cues)
        return (*row, f"importance {b:g} + (1 - {b:g}) x (1 - {factors}) = {result[i]:.6g}")

    return RawSignal(values, Lazy(n, why))
