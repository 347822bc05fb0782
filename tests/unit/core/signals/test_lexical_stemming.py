"""Stemmed lexical overlap: the IDF formula over stems, worked by hand, and the prefix search against a slow port."""

from __future__ import annotations

import math
from unittest import mock

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memrank.core.errors import ConfigError
from memrank.core.signals import lexical as lexical_module
from memrank.core.signals.lexical import lexical
from memrank.core.text.buffers import token_index_of
from memrank.core.text.stem import LANGUAGES, matching, stem
from memrank.core.text.stopwords import BY_LANGUAGE
from memrank.core.text.words import terms, tokens
from memrank.profiles.model import profile_from_mapping
from tests.support.build import batch, ctx, profile, run


def idf(n: int, df: int) -> float:
    return math.log((1 + n) / (1 + df)) + 1


def test_forms_of_a_query_term_count_as_the_term_worked_by_hand():
    # Query terms (stop words out): melanie, paint, sunrise -> stems melani, paint, sunris.
    # c0 holds all three ("painted" -> paint); c1 and c3 hold "paint" forms only; c2 none; N = 4.
    # df: melani 1, paint 3, sunris 1.
    b = batch({"content": "Melanie painted a sunrise"}, {"content": "she paints daily"}, {"content": "nothing here"},
              {"content": "Painting lessons"})
    got = run(lexical, b, ctx("When did Melanie paint a sunrise?"), profile(lexical_stemmer="english"))
    total = idf(4, 1) + idf(4, 3) + idf(4, 1)
    assert got.values.tolist() == pytest.approx([1.0, idf(4, 3) / total, 0.0, idf(4, 3) / total], abs=1e-12)
    assert got.reasons[1] == ("1 of 3 query terms found: paint",)
    # Without a stemmer only exact words count: c0 has melanie and sunrise (df 1 each); paint is nowhere (df 0).
    plain = run(lexical, b, ctx("When did Melanie paint a sunrise?"), profile(lexical_stemmer=None))
    total = idf(4, 1) + idf(4, 0) + idf(4, 1)
    assert plain.values.tolist() == pytest.approx([2 * idf(4, 1) / total, 0.0, 0.0, 0.0], abs=1e-12)


def test_query_terms_sharing_a_stem_count_once():
    # "camping" and "camped" both stem to camp: one term, found in c0 only (N = 2, df 1): 1.0 and 0.
    b = batch({"content": "we camp here"}, {"content": "a lake"})
    got = run(lexical, b, ctx("camping camped"), profile(lexical_stemmer="english"))
    assert got.values.tolist() == [1.0, 0.0]
    assert got.reasons[0] == ("1 of 1 query terms found: camping",)


def test_other_languages_and_accents():
    # German Snowball: "Häuser" and "Haus" share the stem "haus".
    assert stem("german", "häuser") == stem("german", "haus") == "haus"
    b = batch({"content": "Zwei Häuser am See"}, {"content": "Ein Boot"})
    got = run(lexical, b, ctx("Haus"), profile(lexical_stemmer="german"))
    assert got.values.tolist() == [1.0, 0.0]


def test_a_stem_that_does_not_begin_its_word_is_missed_as_documented():
    # English Snowball rewrites "dying" to "die": the prefix search looks only at words starting "di".
    assert stem("english", "dying") == "die"
    b = batch({"content": "the plant was dying"}, {"content": "plants die"})
    got = run(lexical, b, ctx("die"), profile(lexical_stemmer="english"))
    assert got.values.tolist() == [0.0, 1.0]


def test_the_stemmer_is_a_validated_profile_key():
    assert "english" in LANGUAGES and "german" in LANGUAGES
    p = profile_from_mapping("profiles.x", {"signals": [{"name": "lexical", "weight": 1}], "lexical_stemmer": "french"})
    assert p.lexical_stemmer == "french"
    bad = {"signals": [{"name": "lexical", "weight": 1}], "lexical_stemmer": "klingon"}
    with pytest.raises(ConfigError, match=r"profiles\.x\.lexical_stemmer: 'klingon' is not a Snowball language"):
        profile_from_mapping("profiles.x", bad)


WORDS = st.sampled_from(["paint", "painted", "painting", "paints", "painter", "run", "running", "runs", "ran",
                         "camp", "camping", "caméra", "café", "cafés", "x", "ok", "pa", "pain", "pains", "über",
                         "generously", "generous", "happy", "happiness", "happily"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(WORDS, max_size=6).map(" ".join), min_size=1, max_size=6),
       st.lists(WORDS, min_size=1, max_size=4, unique=True))
def test_matching_agrees_with_stemming_every_word(contents, query):
    # The slow port stems every token of every content; a word matches stem s when its stem is s and it
    # begins with s's first two bytes (the documented prefix rule).
    stems = list(dict.fromkeys(stem("english", w) for w in query))
    index = token_index_of(contents)
    which = matching(index, "english", stems)
    fast = np.zeros((len(contents), len(stems)), dtype=bool)
    at = np.flatnonzero(which >= 0)
    fast[index.owner[at], which[at]] = True
    slow = np.array([[any(stem("english", w) == s and w.encode()[:2] == s.encode()[:2] for w in tokens(c))
                      for s in stems] for c in contents], dtype=bool).reshape(len(contents), len(stems))
    assert (fast == slow).all()


def test_the_stemmer_language_brings_its_stop_words():
    # German: "wo", "ist", "das" are stop words there, so the query's only term is "haus" (stem haus), found in
    # c0 only: 1.0 and 0. Without the German list the three words would be terms found nowhere (IDF share < 1).
    b = batch({"content": "Zwei Häuser am See"}, {"content": "Ein Boot"})
    assert terms("Wo ist das Haus?", BY_LANGUAGE["german"]) == ["haus"]
    got = run(lexical, b, ctx("Wo ist das Haus?"), profile(lexical_stemmer="german"))
    assert got.values.tolist() == [1.0, 0.0]
    # English has no extra list: "the" is already an English stop word, "house" stays.
    assert "english" not in BY_LANGUAGE and terms("Where is the house?") == ["house"]
    # Negations are kept, as in English (Portuguese "no" is "em o", in the: a stop word there; "não" is kept).
    negations = {"german": "nicht", "french": "pas", "spanish": "no", "italian": "non", "portuguese": "não",
                 "dutch": "niet"}
    assert all(word not in BY_LANGUAGE[language] for language, word in negations.items())


# "dying" stems to "die" but does not begin with its first two bytes: the prefix rule keeps it from matching.
REWRITTEN = st.sampled_from(["dying", "die", "died", "dyed", "lying", "lie"])
TEXTS = st.lists(WORDS | REWRITTEN | st.sampled_from(["Paint,", "RUNS!", "the", "x_y", "\x00", "İ", "paint's"]),
                 max_size=8).map(" ".join) | st.text(max_size=20)


@settings(max_examples=200, deadline=None)
@given(st.lists(TEXTS, min_size=1, max_size=6), st.lists(WORDS | REWRITTEN, min_size=1, max_size=4).map(" ".join),
       st.sampled_from([None, "english", "german"]))
@example(["dying dyed"], "die dyed", "english")  # "dying" begins with the stem "dy"'s bytes, its stem is "die"
def test_a_small_batch_read_memory_by_memory_equals_the_word_index(contents, query, stemmer):
    # A batch of up to SMALL_BATCH short memories is read from each memory's tokens in Python; the word
    # index (forced with SMALL_BATCH 0) must give the same values and reasons.
    c, p = ctx(query), profile(lexical_stemmer=stemmer)
    got = {}
    for tiny in (0, len(contents)):
        b = batch(*({"content": t} for t in contents))  # a fresh batch: nothing memoised
        with mock.patch.object(lexical_module, "SMALL_BATCH", tiny):
            got[tiny] = run(lexical, b, c, p)
    small, columns = got[len(contents)], got[0]
    assert small.values.tolist() == columns.values.tolist()
    assert [small.reasons[i] for i in range(b.n)] == [columns.reasons[i] for i in range(b.n)]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(WORDS | st.sampled_from(["Häuser", "haus", "häuslich", "peintures", "peinture"]),
                         max_size=6).map(" ".join), min_size=1, max_size=6),
       st.lists(WORDS | st.sampled_from(["haus", "peinture"]), min_size=1, max_size=4, unique=True),
       st.sampled_from(["german", "french"]))
def test_matching_in_other_languages_agrees_with_stemming_every_word(contents, query, language):
    # No prefix rule there: a word matches stem s when its stem is s (the slow port stems every token).
    stems = list(dict.fromkeys(stem(language, w) for w in query))
    index = token_index_of(contents)
    which = matching(index, language, stems)
    fast = np.zeros((len(contents), len(stems)), dtype=bool)
    at = np.flatnonzero(which >= 0)
    fast[index.owner[at], which[at]] = True
    slow = np.array([[any(stem(language, w) == s for w in tokens(c)) for s in stems] for c in contents],
                    dtype=bool).reshape(len(contents), len(stems))
    assert (fast == slow).all()
