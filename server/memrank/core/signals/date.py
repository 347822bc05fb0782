"""Date: the query names a date, and the memory is from then.

"What book did Tim finish on 8th December, 2023?" is answered by what was
said around that day, whatever its words. The query's dates are read from
its head/tail sample (``text.words.sample``), English month names or
their three-letter forms, case-insensitive, each a span of UTC time:

- a day: "8 December 2023", "8th December, 2023", "December 8, 2023",
  "Dec 8th 2023", or ISO "2023-12-08": that day, [00:00, 24:00);
- a month: "December 2023", "Dec. 2023" (not part of a day): that month.

A day that does not exist ("30 February 2024", "2023-02-30") is skipped
whole, its month included.

A year alone ("in 2023") is not read: it rarely narrows anything, and a bare
four-digit number is often not a year. A memory's time is its
``event_time``, else its ``created_at``; the signal is::

    date = max over the query's spans of exp(-days outside the span / TAU_DAYS)

(days outside = 0 inside the span), in [0, 1]: 1 within the span, 0.37 a
week outside it, 0.02 four weeks outside. 0 for every memory when the query
names no date (a profile with ``share_constant_weight`` then gives its weight
to the others) and for a memory without a time. Reasons name the span.
"""

from __future__ import annotations

import calendar
import datetime as dt
import math
import re

import numpy as np

from memrank.core.batch import Batch
from memrank.core.profile import Profile
from memrank.core.reasons import Lazy, Same
from memrank.core.signals.base import RawSignal, ScoringContext
from memrank.core.text.words import sample

TAU_DAYS = 7.0
DAY = 86400.0

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_MONTHS["sept"] = 9
_M = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_M})\.?,?\s+(\d{{4}})\b", re.IGNORECASE)
_MONTH_DAY_YEAR = re.compile(rf"\b({_M})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.IGNORECASE)
_DIGIT = re.compile(r"\d")
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTH_YEAR = re.compile(rf"\b({_M})\.?,?\s+(\d{{4}})\b", re.IGNORECASE)


def _epoch(year: int, month: int, day: int) -> float | None:
    try:
        return dt.datetime(year, month, day, tzinfo=dt.UTC).timestamp()
    except ValueError:  # no such day (February 30th), or a year out of range
        return None


def query_spans(query: str) -> list[tuple[float, float, str]]:
    """The dates the query names, as (start, end, as written) in epoch seconds, in order of appearance."""
    text = sample(query)
    if _DIGIT.search(text) is None:  # every form has a digit: a query with none names no date
        return []
    out: list[tuple[int, float, float, str]] = []
    taken: list[tuple[int, int]] = []
    for rx, order in ((_DAY_MONTH_YEAR, "dmy"), (_MONTH_DAY_YEAR, "mdy"), (_ISO, "iso")):
        for m in rx.finditer(text):
            if order == "dmy":
                y, mo, d = int(m[3]), _MONTHS[m[2].lower()], int(m[1])
            elif order == "mdy":
                y, mo, d = int(m[3]), _MONTHS[m[1].lower()], int(m[2])
            else:
                y, mo, d = int(m[1]), int(m[2]), int(m[3])
            taken.append(m.span())  # an impossible day is skipped whole: its month is not read either
            start = _epoch(y, mo, d) if 1 <= mo <= 12 else None
            if start is not None:
                out.append((m.start(), start, start + DAY, m[0]))
    for m in _MONTH_YEAR.finditer(text):
        if any(a <= m.start() < b for a, b in taken):  # "December 2023" inside "8th December, 2023"
            continue
        y, mo = int(m[2]), _MONTHS[m[1].lower()]
        start = _epoch(y, mo, 1)
        end = _epoch(y + 1, 1, 1) if mo == 12 else _epoch(y, mo + 1, 1)
        if start is not None and end is not None:
            out.append((m.start(), start, end, m[0]))
    return [(a, b, w) for _, a, b, w in sorted(out)]


def date(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """exp(-days outside the query's nearest date span / 7) of each memory's event_time, else created_at."""
    spans = query_spans(ctx.query)
    if not spans or batch.n == 0:
        return RawSignal(np.zeros(batch.n), Same(batch.n, "the query names no date"))
    t = np.where(np.isnan(batch.event_time), batch.created_at, batch.event_time)
    timed = ~np.isnan(t)
    best = np.zeros(batch.n)
    which = np.zeros(batch.n, dtype=np.int64)
    for k, (start, end, _) in enumerate(spans):
        outside = np.maximum(0.0, np.maximum(start - t, t - end)) / DAY
        v = np.where(timed, np.exp(-np.where(timed, outside, 0.0) / TAU_DAYS), 0.0)
        better = v > best
        best[better] = v[better]
        which[better] = k
    return RawSignal(best, Lazy(batch.n, lambda i: _reason(batch, spans, t, best, which, i)))


def _reason(batch: Batch, spans: list[tuple[float, float, str]], t: np.ndarray, best: np.ndarray,
            which: np.ndarray, i: int) -> tuple[str, ...]:
    if math.isnan(t[i]):
        return ("no event_time or created_at",)
    field = "created_at" if math.isnan(batch.event_time[i]) else "event_time"
    start, end, written = spans[int(which[i])]
    days = max(0.0, start - t[i], t[i] - end) / DAY
    if days == 0.0:
        return (f"{field} within {written!r}",)
    return (f"{field} {days:.1f} days outside {written!r}: exp(-{days:.1f}/{TAU_DAYS:g}) = {best[i]:.3f}",)
