"""The numpy shingle index gives exactly the Jaccard index of the ``shingles`` sets."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from memrank.core.batch import CandidateInput, batch_from_rows
from memrank.core.selection.similarity import Similarity
from memrank.core.text.words import tokens


def shingles(text: str) -> frozenset[str]:
    """The unigram and bigram shingles of a text's token sample (the module docstring's sets)."""
    words = tokens(text)
    return frozenset(words).union(map(" ".join, itertools.pairwise(words)))


TEXT = st.text(alphabet=[*"ab c", "é", "東", ".", "\n", "_", "A", "İ", "\x00"], max_size=30) | st.builds(
    lambda word, k: " ".join([word] * k), st.sampled_from(["a", "b_c", "ab"]), st.integers(600, 1500))


@settings(max_examples=200, deadline=None)
@given(st.lists(TEXT, min_size=1, max_size=8))
def test_rows_equal_set_jaccard(texts: list[str]) -> None:
    sim = Similarity(batch_from_rows([CandidateInput(str(i), content=t) for i, t in enumerate(texts)]))
    sets = [shingles(t) for t in texts]
    for i, a in enumerate(sets):
        want = [len(a & b) / len(a | b) if a | b else 0.0 for b in sets]
        assert sim.row(i).tolist() == want


def test_cosine_rows_clip_at_zero() -> None:
    rows = [CandidateInput("a", embedding=(1.0, 0.0)), CandidateInput("b", embedding=(-1.0, 0.5))]
    sim = Similarity(batch_from_rows(rows))
    assert sim.kind == "cosine"
    assert np.allclose(sim.row(0), [1.0, 0.0])


def test_rows_equal_set_jaccard_on_a_larger_batch_with_long_words() -> None:
    # Words of 9+ bytes that share their first 8 (ids from the dictionary of long words) next to short
    # ones (ids from their packed bytes), repeated within and across 120 candidates.
    vocab = ["abcdefghij", "abcdefghik", "abcdefgh", "abcdefg", "internationalization", "internationalisation",
             "x", "xy", "tea", "oat", "milk", "a" * 40, "a" * 41]
    rng = np.random.default_rng(4)
    texts = [" ".join(rng.choice(vocab, size=int(rng.integers(0, 12)))) for _ in range(120)]
    sim = Similarity(batch_from_rows([CandidateInput(str(i), content=t) for i, t in enumerate(texts)]))
    sets = [shingles(t) for t in texts]
    for i in range(0, 120, 7):
        a = sets[i]
        assert sim.row(i).tolist() == [len(a & b) / len(a | b) if a | b else 0.0 for b in sets]
