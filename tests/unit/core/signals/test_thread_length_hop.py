"""The thread, length and hop signals against their formulas, worked by hand, and a slow per-candidate port."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memrank.core.signals.hop import hop
from memrank.core.signals.length import FULL_TOKENS, length
from memrank.core.signals.thread import thread, thread_codes
from tests.support.build import batch, ctx, profile, run


def _rel(x: float, **kw: object) -> dict[str, object]:
    return {"retrieval_score": x, **kw}


def test_thread_is_the_best_other_match_of_the_same_thread_worked_by_hand():
    # Relevance 0.2, 1.0, 0.6, 0.0, 0.8 -> min-max over the five: 0.2, 1.0, 0.6, 0.0, 0.8. Empty query: lexical 0,
    # match = 0.75 x minmax(relevance) = 0.15, 0.75, 0.45, 0, 0.6 (context_lexical 0.25).
    # Threads: s = {c0, c1, c2}, t = {c3}, c4 has none (no thread, no position).
    b = batch(_rel(0.2, thread="s"), _rel(1.0, thread="s"), _rel(0.6, thread="s"), _rel(0.0, thread="t"), _rel(0.8))
    got = run(thread, b, ctx(""), profile(context_lexical=0.25))
    # c0: best of c1, c2 = 0.75; c1: best of c0, c2 = 0.45 (never its own); c2: 0.75; c3: alone; c4: no thread.
    assert got.values.tolist() == pytest.approx([0.75, 0.45, 0.75, 0.0, 0.0], abs=1e-12)
    assert got.reasons[1] == ("memory 'c2' of the same thread matches the query 0.450",)
    assert got.reasons[3] == ("no other memory of its thread in the batch",)
    assert got.reasons[4] == ("no thread",)


def test_thread_is_zero_for_all_when_no_two_candidates_share_one():
    # Session-level memory: one candidate per thread.
    b = batch(_rel(0.9, thread="a"), _rel(0.1, thread="b"), _rel(0.5))
    got = run(thread, b)
    assert got.values.tolist() == [0.0, 0.0, 0.0]
    assert got.reasons[0] == ("no other memory shares its thread",)


def test_thread_codes_number_threads_in_first_appearance_order() -> None:
    assert thread_codes(batch(_rel(0.1), _rel(0.2))).tolist() == [-1, -1]  # no thread, no position
    b = batch(_rel(0.1, thread="b"), _rel(0.2), _rel(0.3, thread="a"), _rel(0.4, thread="b"), _rel(0.5, position=3))
    assert thread_codes(b).tolist() == [0, -1, 1, 0, 2]  # a position alone puts it in the unnamed thread


def test_thread_gated_members_lend_nothing_and_positions_make_an_unnamed_thread():
    # c0, c1 at positions in the unnamed thread "", c2 the same but gated. c1's only other member is c0.
    # Population {c0, c1}: min-max 0.3 -> 0, 0.9 -> 1; match 0, 0.75.
    b = batch(_rel(0.3, position=0), _rel(0.9, position=5), _rel(1.0, position=9))
    got = run(thread, b, ctx(""), profile(context_lexical=0.25), population=np.array([True, True, False]))
    assert got.values.tolist() == pytest.approx([0.75, 0.0, 0.75], abs=1e-12)


def test_thread_ties_go_to_the_lower_index():
    b = batch(_rel(0.0, thread="s"), _rel(1.0, thread="s"), _rel(1.0, thread="s"))
    got = run(thread, b, ctx(""), profile(context_lexical=0.0))
    assert got.values.tolist() == pytest.approx([1.0, 1.0, 1.0], abs=1e-12)
    assert got.reasons[0] == ("memory 'c1' of the same thread matches the query 1.000",)
    assert got.reasons[1] == ("memory 'c2' of the same thread matches the query 1.000",)


def _slow_thread(rows, population, a):
    rel = [r["retrieval_score"] for r in rows]
    pop = [rel[i] for i in range(len(rows)) if population[i]]
    lo, hi = (min(pop), max(pop)) if pop else (0.0, 0.0)
    match = [(((rel[i] - lo) / (hi - lo)) if hi > lo else 0.5) * (1 - a) if population[i] else 0.0
             for i in range(len(rows))]
    out = []
    for i, r in enumerate(rows):
        named = r.get("thread", "") != "" or r.get("position") is not None
        others = [match[j] for j, o in enumerate(rows) if j != i and population[j] and named
                  and o.get("thread", "") == r.get("thread", "") and (o.get("thread", "") != "" or o.get("position")
                                                                     is not None)]
        out.append(max(others) if others else 0.0)
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.sampled_from(["", "a", "b"]), st.sampled_from([None, 0, 1]),
                          st.booleans()), min_size=1, max_size=9))
def test_thread_matches_a_slow_port(spec):
    rows = [{"retrieval_score": r, **({"thread": t} if t else {}), **({"position": p} if p is not None else {})}
            for r, t, p, _ in spec]
    population = np.array([keep for *_, keep in spec])
    got = run(thread, batch(*rows), ctx(""), profile(context_lexical=0.0), population=population)
    assert got.values.tolist() == pytest.approx(_slow_thread(rows, population, 0.0), abs=1e-12)
    assert ((got.values >= 0) & (got.values <= 1)).all()


def test_length_on_a_log_scale_full_at_200_tokens():
    b = batch({"token_count": 14}, {"token_count": FULL_TOKENS}, {"token_count": 5000},
              {"content": "x" * 30}, {"content": ""})
    got = run(length, b)
    # ln 15 / ln 201 = 0.51074...; 200 and 5000 tokens: 1;
    # 30 characters, no token_count: ceil(30/4) = 8 -> ln 9 / ln 201.
    assert got.values.tolist() == pytest.approx([math.log(15) / math.log(201), 1.0, 1.0,
                                                 math.log(9) / math.log(201), 0.0], abs=1e-12)
    assert got.reasons[0] == ("14 tokens (full at 200)",)
    assert got.reasons[3] == ("8 tokens (estimated from characters) (full at 200)",)


def _unit(*v: float) -> list[float]:
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def test_hop_is_the_best_cosine_with_one_of_the_three_best_matches_worked_by_hand():
    # Relevance 1.0, 0.9, 0.8, 0.1, 0.0: the seeds are c0, c1, c2 (the three best matches).
    # Embeddings: c0 = x, c1 = y, c2 = z, c3 = (x + y) / sqrt 2, c4 = (-x + z) / sqrt 2.
    # c0: best of cos(c0, c1) = 0, cos(c0, c2) = 0 -> 0 (not itself); c3: cos with c0 = cos with c1 = 1/sqrt 2;
    # c4: cos with c0 = -0.707, with c2 = +0.707 -> 0.707.
    e = [_unit(1, 0, 0), _unit(0, 1, 0), _unit(0, 0, 1), _unit(1, 1, 0), _unit(-1, 0, 1)]
    b = batch(*({"retrieval_score": r, "embedding": v} for r, v in zip([1.0, 0.9, 0.8, 0.1, 0.0], e, strict=True)))
    got = run(hop, b, ctx(""), profile(context_lexical=0.25))
    h = 1 / math.sqrt(2)
    assert got.values.tolist() == pytest.approx([0.0, 0.0, 0.0, h, h], abs=1e-6)
    assert got.reasons[3] == ("cosine 0.707 with 'c0', one of the query's 3 best matches",)
    assert got.reasons[4] == ("cosine 0.707 with 'c2', one of the query's 3 best matches",)
    assert got.reasons[0] == ("not like any of the query's 3 best matches",)


def test_hop_without_embeddings_or_with_one_candidate_is_zero():
    assert run(hop, batch(_rel(0.5), _rel(0.7))).values.tolist() == [0.0, 0.0]
    assert run(hop, batch({"embedding": [1.0, 0.0]})).values.tolist() == [0.0]
    # Gated candidates are never seeds: only c1 and c2 are in the population, c1 seeds c2 and c2 seeds c1.
    b = batch({"retrieval_score": 1.0, "embedding": [1.0, 0.0]}, {"retrieval_score": 0.5, "embedding": [0.6, 0.8]},
              {"retrieval_score": 0.0, "embedding": [0.0, 1.0]})
    got = run(hop, b, ctx(""), profile(context_lexical=0.0), population=np.array([False, True, True]))
    # c0 (gated, still valued): best of cos(c0, c1) = 0.6, cos(c0, c2) = 0 -> 0.6; c1: cos(c1, c2) = 0.8; c2: 0.8.
    assert got.values.tolist() == pytest.approx([0.6, 0.8, 0.8], abs=1e-6)


def test_statement_is_zero_for_a_memory_that_ends_with_a_question_mark():
    from memrank.core.signals.statement import statement

    b = batch({"content": "Did you go to the support group?"}, {"content": "Yes, yesterday. It was great!"},
              {"content": "Why? I went anyway.  "}, {"content": "你去了吗？ \n"}, {"content": "هل ذهبت؟"},
              {"content": ""})
    got = run(statement, b)
    assert got.values.tolist() == [0.0, 1.0, 1.0, 0.0, 0.0, 1.0]
    assert got.reasons[0] == ("ends with a question mark: asks rather than answers",)
    assert got.reasons[1] == ("a statement (no closing question mark)",)


ENDINGS = st.sampled_from(["", "?", " ?", "? ", "?\n", "?\x1f", "?\x00", "\uff1f", "\u061f ", "a", ".", "? x", "\t"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["", "why", "ok then", "what now", "é"]), ENDINGS).map("".join),
                min_size=1, max_size=20))
def test_statement_reads_each_contents_last_character_as_rstrip_does(contents):
    # The definition is per content: trailing white space removed, then the last character.
    from memrank.core.signals.statement import statement
    got = run(statement, batch(*({"content": c} for c in contents)))
    expected = [0.0 if c.rstrip().endswith(("?", "\uff1f", "\u061f")) else 1.0 for c in contents]
    assert got.values.tolist() == expected
    asks, states = ("ends with a question mark: asks rather than answers",), ("a statement (no closing question mark)",)
    assert [got.reasons[i] for i in range(len(contents))] == [asks if e == 0 else states for e in expected]
