"""The batch-wide substring search counts exactly what one ``in`` per content and word counts."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memrank.core.signals.substring import _column_hits

ALPHABET = ["a", "b", "ab", "ba", "A", "B", " ", "\0", "é", "x", "İ"]
contents = st.lists(st.lists(st.sampled_from(ALPHABET), max_size=8).map("".join), min_size=1, max_size=6)
words = st.lists(st.lists(st.sampled_from(["a", "b", "x", "ab", "\0", "é"]), min_size=1, max_size=3).map("".join),
                 max_size=5)


@settings(max_examples=600, deadline=None)
@given(contents, words)
def test_column_hits_equal_per_content_search(texts: list[str], task_words: list[str]) -> None:
    want = [sum(w in t.lower() for w in task_words) for t in texts]
    assert _column_hits(tuple(texts), task_words).tolist() == want
