"""The batch-wide substring search counts exactly what one ``in`` per content and word counts."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memrank.core.signals.substring import _column_hits
from memrank.core.text.buffers import ascii_joined
from memrank.core.text.golang import to_lower
from tests.support.build import batch


def per_content(texts: list[str], task_words: list[str]) -> list[int]:
    """The definition: one ``in`` per content and listed word, on the content lower-cased as Go does."""
    return [sum(w in to_lower(t) for w in task_words) for t in texts]


# Pieces that make words of 1 to 30 bytes (across the 8-byte chunks), case changes, characters whose lower
# case is shorter ("İ"), capital and small sigmas, lone surrogates, NUL and separators.
ALPHABET = ["a", "b", "ab", "ba", "A", "B", " ", "\0", "é", "x", "İ", "Σ", "ς", "σ", "\ud83d", "abcdefgh", "\t"]
WORD_PIECES = ["a", "b", "x", "ab", "\0", "é", "σ", "ς", "i̇", "\ud83d", "abcdefgh", "bcdefgha"]
ASCII = ["a", "b", "ab", "A", " ", "x", "\0", "abcdefgh", "Abcdefgh", ".", "\n"]
ASCII_PIECES = ["a", "b", "x", "ab", "abcdefgh", "bcdefgha", "\0", "."]


def texts(alphabet: list[str]) -> st.SearchStrategy[list[str]]:
    return st.lists(st.lists(st.sampled_from(alphabet), max_size=10).map("".join), min_size=1, max_size=6)


def words(pieces: list[str]) -> st.SearchStrategy[list[str]]:
    return st.lists(st.lists(st.sampled_from(pieces), min_size=1, max_size=4).map("".join), max_size=5)


@settings(max_examples=600, deadline=None)
@given(texts(ALPHABET), words(WORD_PIECES))
def test_column_hits_equal_per_content_search(contents: list[str], task_words: list[str]) -> None:
    assert _column_hits(tuple(contents), task_words).tolist() == per_content(contents, task_words)


@settings(max_examples=400, deadline=None)
@given(texts(ASCII), words(ASCII_PIECES))
def test_ascii_batches_lowered_at_once_count_the_same(contents: list[str], task_words: list[str]) -> None:
    want = per_content(contents, task_words)
    assert _column_hits(tuple(contents), task_words).tolist() == want
    # The batch's joined ASCII bytes (shared with the word index) give the same counts.
    joined = ascii_joined(batch(*({"content": c} for c in contents)))
    assert joined is not None
    assert _column_hits(tuple(contents), task_words, joined).tolist() == want


def test_edges_of_the_buffer_and_of_each_content() -> None:
    contents = ("", "abcdefghijklmnopq", "qrs", "ABCDEFGHIJKLMNOPQ RS", "x")
    task_words = ["abcdefghijklmnopq", "pq", "qrs", "x", "q", "pqr", "rs", "", "a b"]
    # By hand, per content: 0 holds only ""; 1 the long word, "pq", "q", ""; 2 "qrs", "q", "rs", "";
    # 3 the long word, "pq", "q", "rs", "" ("qrs" and "pqr" only across its space); 4 "x", "".
    # "qrs" is not found across the boundary of contents 1 and 2, nor "a b" anywhere.
    assert _column_hits(contents, task_words).tolist() == [1, 4, 4, 5, 2]
    assert _column_hits(contents, []).tolist() == [0] * 5
    assert _column_hits((), ["a"]).tolist() == []


def test_a_word_listed_twice_counts_twice() -> None:
    assert _column_hits(("the cat", "dog"), ["the", "the", "dog"]).tolist() == [2, 1]
