"""The date signal against its formula, worked by hand: the query's date spans, and exp(-days outside / 7)."""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pytest

from memrank.core.signals.date import date, query_spans
from tests.support.build import batch, ctx, run


def _t(y: int, m: int, d: int, h: int = 0) -> float:
    return dt.datetime(y, m, d, h, tzinfo=dt.UTC).timestamp()


@pytest.mark.parametrize(("query", "spans"), [
    ("What book did Tim finish on 8th December, 2023?", [(_t(2023, 12, 8), _t(2023, 12, 9), "8th December, 2023")]),
    ("what happened on december 8 2023", [(_t(2023, 12, 8), _t(2023, 12, 9), "december 8 2023")]),
    ("Dec 8th, 2023 and 2024-02-29", [(_t(2023, 12, 8), _t(2023, 12, 9), "Dec 8th, 2023"),
                                      (_t(2024, 2, 29), _t(2024, 3, 1), "2024-02-29")]),
    ("What setback did Melanie face in October 2023?", [(_t(2023, 10, 1), _t(2023, 11, 1), "October 2023")]),
    ("in Dec. 2023", [(_t(2023, 12, 1), _t(2024, 1, 1), "Dec. 2023")]),
    ("in 2023, on 2023-02-30, in Smarch 2023", []),  # a bare year, no such day, no such month
    ("on 30 February 2024", []),  # no such day: skipped whole, February 2024 not read from it
])
def test_query_spans(query, spans):
    assert query_spans(query) == spans


def test_date_is_one_inside_the_span_and_decays_a_week_at_a_time_outside():
    # Query: 8 December 2023, [Dec 8 00:00, Dec 9 00:00).
    b = batch({"created_at": _t(2023, 12, 8, 15)},               # inside: 1
              {"created_at": _t(2023, 12, 16)},                  # 7 days after the end: e^-1
              {"created_at": _t(2023, 12, 1)},                   # 7 days before the start: e^-1
              {"created_at": _t(2023, 12, 1), "event_time": _t(2023, 12, 8, 12)},  # event_time wins: 1
              {})                                                # no time: 0
    got = run(date, b, ctx("What did Tim read on 8th December, 2023?", reference_time=_t(2024, 1, 1)))
    assert got.values.tolist() == pytest.approx([1.0, math.exp(-1), math.exp(-1), 1.0, 0.0], abs=1e-12)
    assert got.reasons[0] == ("created_at within '8th December, 2023'",)
    assert got.reasons[1] == ("created_at 7.0 days outside '8th December, 2023': exp(-7.0/7) = 0.368",)
    assert got.reasons[3] == ("event_time within '8th December, 2023'",)
    assert got.reasons[4] == ("no event_time or created_at",)


def test_the_nearest_of_two_spans_counts_and_no_date_gives_zero_for_all():
    # October 2023 and 2 January 2024: Nov 4 is 3.5 days after October's end (Nov 1 00:00 + 3.5 d = Nov 4 12:00).
    b = batch({"created_at": _t(2023, 11, 4, 12)}, {"created_at": _t(2024, 1, 2, 6)})
    got = run(date, b, ctx("in October 2023 or on 2024-01-02", reference_time=_t(2024, 6, 1)))
    assert got.values.tolist() == pytest.approx([math.exp(-3.5 / 7), 1.0], abs=1e-12)
    got = run(date, b, ctx("what did she read?"))
    assert got.values.tolist() == [0.0, 0.0] and got.reasons[0] == ("the query names no date",)
    assert isinstance(got.values, np.ndarray)
