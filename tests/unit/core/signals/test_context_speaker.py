"""The context and speaker signals against their formulas, worked by hand, and a slow per-candidate port."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memrank.core.signals.context import context
from memrank.core.signals.speaker import name_words, speaker
from tests.support.build import batch, ctx, profile, run


def _rel(x: float) -> dict[str, float]:
    return {"retrieval_score": x}


def test_context_is_the_best_neighbour_match_worked_by_hand():
    # One thread s at positions 0..3 and one candidate of another thread at position 1.
    # Relevance 0.2, 1.0, 0.6, 0.0, 0.8 -> min-max over the five: 0.2, 1.0, 0.6, 0.0, 0.8.
    # No query terms, so lexical is 0 and match = (1 - 0.25) x minmax(relevance).
    b = batch({**_rel(0.2), "thread": "s", "position": 0}, {**_rel(1.0), "thread": "s", "position": 1},
              {**_rel(0.6), "thread": "s", "position": 2}, {**_rel(0.0), "thread": "s", "position": 3},
              {**_rel(0.8), "thread": "t", "position": 1})
    got = run(context, b, ctx(""), profile(context_lexical=0.25))
    m = [0.75 * 0.2, 0.75 * 1.0, 0.75 * 0.6, 0.0, 0.75 * 0.8]
    # c0: next is c1; c1: max(c0, c2); c2: max(c1, c3); c3: c2; c4: thread t has no position 0 or 2.
    assert got.values.tolist() == pytest.approx([m[1], max(m[0], m[2]), max(m[1], m[3]), m[2], 0.0], abs=1e-12)
    assert got.reasons[0] == ("next memory 'c1' matches the query 0.750",)
    assert got.reasons[3] == ("previous memory 'c2' matches the query 0.450",)
    assert got.reasons[4] == ("no neighbour in the batch (same thread, position +/- 1)",)


def test_context_lexical_part_of_the_match():
    # Query "tea": c1 says tea, c0 does not. N = 2, df(tea) = 1: lexical c1 = 1, c0 = 0.
    # Relevance min-max: c0 = 1, c1 = 0. With a = 0.5: match c0 = 0.5 x 1 = 0.5, c1 = 0.5 x 1 = 0.5.
    b = batch({"content": "coffee", "retrieval_score": 0.9, "position": 4},
              {"content": "green tea", "retrieval_score": 0.1, "position": 5})
    got = run(context, b, ctx("tea"), profile(context_lexical=0.5))
    assert got.values.tolist() == pytest.approx([0.5, 0.5], abs=1e-12)
    got0 = run(context, b, ctx("tea"), profile(context_lexical=0.0))
    assert got0.values.tolist() == pytest.approx([0.0, 1.0], abs=1e-12)  # c0's neighbour c1 has relevance 0


def test_context_without_positions_or_with_gated_neighbours():
    b = batch(_rel(0.3), _rel(0.9))
    got = run(context, b)
    assert got.values.tolist() == [0.0, 0.0] and got.reasons[0] == ("no position: no neighbours",)
    # A neighbour outside the population (gated) lends nothing: c0 gets 0. The gated c1 still has a raw value
    # (its normalised value is 0 anyway): c0 alone is the population, a constant min-max gives 0.5, x 0.75.
    b = batch({**_rel(0.3), "position": 0}, {**_rel(0.9), "position": 1})
    got = run(context, b, population=np.array([True, False]))
    assert got.values.tolist() == [0.0, 0.75 * 0.5]


def test_context_duplicate_positions_take_the_best_and_never_their_own():
    # Two candidates at position 1: each is not the other's neighbour; c0 at 0 sees the better of the two.
    b = batch({**_rel(0.0), "position": 0}, {**_rel(0.5), "position": 1}, {**_rel(1.0), "position": 1})
    got = run(context, b, ctx(""), profile(context_lexical=0.0))
    assert got.values.tolist() == pytest.approx([1.0, 0.0, 0.0], abs=1e-12)
    # The largest position has no next neighbour (2^53 + 1 is not representable; it must not find itself).
    top = 2 ** 53
    b = batch({**_rel(0.0), "position": top - 1}, {**_rel(1.0), "position": top})
    got = run(context, b, ctx(""), profile(context_lexical=0.0))
    assert got.values.tolist() == pytest.approx([1.0, 0.0], abs=1e-12)


def _slow_context(rows, population, a):
    rel = [r.get("retrieval_score", 0.0) for r in rows]
    pop = [rel[i] for i in range(len(rows)) if population[i]]
    lo, hi = (min(pop), max(pop)) if pop else (0.0, 0.0)
    match = [((rel[i] - lo) / (hi - lo) if hi > lo else 0.5) * (1 - a) if population[i] else 0.0
             for i in range(len(rows))]
    out = []
    for r in rows:
        best = 0.0
        if "position" in r:
            for j, o in enumerate(rows):
                if population[j] and "position" in o and o.get("thread", "") == r.get("thread", "") \
                        and abs(o["position"] - r["position"]) == 1:
                    best = max(best, match[j])
        out.append(best)
    return out


ROW = st.fixed_dictionaries({"retrieval_score": st.floats(0, 1)},
                            optional={"thread": st.sampled_from(["", "a", "b"]), "position": st.integers(0, 6)})


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(ROW, st.booleans()), max_size=14), st.sampled_from([0.0, 0.25, 1.0]))
def test_context_matches_a_slow_port(rows_pop, a):
    rows = [r for r, _ in rows_pop]
    population = np.array([p for _, p in rows_pop], dtype=bool)
    got = run(context, batch(*rows), ctx(""), profile(context_lexical=a), population=population)
    assert got.values.tolist() == pytest.approx(_slow_context(rows, population, a), abs=1e-12)
    assert all(0.0 <= v <= 1.0 for v in got.values.tolist())


def test_speaker_named_in_the_query():
    b = batch({"speaker": "Caroline"}, {"speaker": "Melanie"}, {}, {"speaker": "Dr. José Ñúñez"})
    got = run(speaker, b, ctx("What did Caroline's friend say to JOSE?"))
    assert got.values.tolist() == [1.0, 0.0, 0.0, 1.0]
    assert got.reasons[0] == ("the query names speaker 'Caroline'",)
    assert got.reasons[1] == ("the query does not name speaker 'Melanie'",)
    assert got.reasons[2] == ("no speaker",)


def test_speaker_needs_whole_words_and_ignores_stop_words():
    # "Al" is in "also" only as a substring; "The" and one-letter initials never identify a speaker.
    b = batch({"speaker": "Al"}, {"speaker": "The Who"}, {"speaker": "J. R."}, {"speaker": "ŁUKASZ"})
    got = run(speaker, b, ctx("also the j r who? łukasz"))
    assert got.values.tolist() == [0.0, 0.0, 0.0, 1.0]
    assert name_words("The Who") == () and name_words("Dr. José") == ("dr", "jose")


def test_speaker_in_a_script_without_spaces():
    b = batch({"speaker": "王伟"}, {"speaker": "李娜"})
    got = run(speaker, b, ctx("王伟上周说了什么？"))
    assert got.values.tolist() == [1.0, 0.0]


def test_speaker_empty_query_or_batch():
    assert run(speaker, batch({"speaker": "Ann"}), ctx("")).values.tolist() == [0.0]
    assert run(speaker, batch(), ctx("Ann")).values.shape == (0,)
    assert math.isclose(float(run(speaker, batch({"speaker": "Ann"}), ctx("ann")).values[0]), 1.0)
