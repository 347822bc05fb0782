import math

import numpy as np
import pytest

from memrank.core.signals.lexical import lexical
from memrank.core.text.words import terms, tokens
from tests.support.build import batch, ctx, run
from tests.support.reference import lexical_idf_score


def test_idf_weighted_share_of_query_terms():
    b = batch({"content": "Python parser docs"}, {"content": "a python snake"}, {"content": "cooking"})
    got = run(lexical, b, ctx("the Python parser?"))
    idf_python = math.log((1 + 3) / (1 + 2)) + 1
    idf_parser = math.log((1 + 3) / (1 + 1)) + 1
    assert got.values == pytest.approx([1.0, idf_python / (idf_python + idf_parser), 0.0], abs=1e-15)
    assert got.reasons[1] == ("1 of 2 query terms found: python",)


def test_matches_the_slow_port():
    contents = ["red fox jumps", "lazy dog sleeps", "the red dog", "fox"]
    query = "red dog fox cat"
    b = batch(*({"content": c} for c in contents))
    population = np.array([True, True, False, True])
    got = run(lexical, b, ctx(query), population=population)
    docs = [set(tokens(c)) for c in contents]
    expected = [lexical_idf_score(terms(query), docs, population.tolist(), i) for i in range(4)]
    assert got.values == pytest.approx(expected, abs=1e-12)


def test_tokens_not_substrings_and_stop_words_do_not_count():
    b = batch({"content": "open the dialog"}, {"content": "the log"})
    got = run(lexical, b, ctx("the log"))
    assert got.values.tolist() == [0.0, 1.0]


def test_query_without_terms_scores_zero():
    got = run(lexical, batch({"content": "the and of"}), ctx("the and of"))
    assert got.values.tolist() == [0.0]
    assert got.reasons[0] == ("no query terms",)


def test_only_the_head_and_tail_are_read():
    middle = "x " * 5000 + "needle " + "y " * 5000
    tail = "x " * 10000 + "needle"
    got = run(lexical, batch({"content": middle}, {"content": tail}), ctx("needle"))
    assert got.values.tolist() == [0.0, 1.0]
