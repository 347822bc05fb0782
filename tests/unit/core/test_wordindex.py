"""The batch word index answers exactly what the per-candidate text functions answer."""

from __future__ import annotations

import itertools
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from memrank.core.phrases import words
from memrank.core.text import tokens
from memrank.core.wordindex import padded_index_of, token_index_of, word_hash

VOCAB = ["i", "prefer", "tea", "I", "Prefer", "don't", "never", "_x", "x_", "café", "İstanbul", "\x00", "a\x00b",
         "ſ", "straße", "東京", "—", "...", "\n", "\t", "  ", "42", "İ", "i̇", "prefer_", "\x01"]
texts = st.lists(st.sampled_from(VOCAB), max_size=25).map(" ".join) | st.text(max_size=60)
batches = st.lists(texts, min_size=1, max_size=8)
probes = st.sampled_from(["i", "prefer", "tea", "café", "straße", "東京", "42", "never", "x", "_x", "don", "t",
                          "i̇", "istanbul", "a", "b", "prefer_", "\x01"])


@settings(max_examples=300, deadline=None)
@given(batches, probes)
def test_token_index_matches_tokens(contents: list[str], term: str) -> None:
    index = token_index_of(contents)
    assert index.has(term).tolist() == [term in tokens(c) for c in contents]
    assert index.counts.tolist() == [len(tokens(c)) for c in contents]


@settings(max_examples=300, deadline=None)
@given(batches, st.lists(probes, min_size=1, max_size=3))
def test_padded_index_matches_padded_words(contents: list[str], phrase: list[str]) -> None:
    index = padded_index_of(contents)
    needle = " " + " ".join(phrase) + " "
    assert index.has(phrase).tolist() == [needle in words(c) for c in contents]
    assert index.opens_with(phrase).tolist() == [words(c).startswith(needle) for c in contents]


def test_long_texts_use_head_and_tail_tokens() -> None:
    middle = " ".join(f"w{k}" for k in range(3000))
    contents = ["start " + middle + " end", "short text here", "x" * 70_000 + " tail"]
    index = token_index_of(contents)
    for term in ("start", "end", "w10", "w1500", "w2990", "tail", "here"):
        assert index.has(term).tolist() == [term in tokens(c) for c in contents], term


def test_words_across_a_hash_block_edge_are_found() -> None:
    # 300 candidates of ~1,000 characters: the buffer is several 65,536-byte hash blocks long, and some words
    # straddle a block edge (hashed one by one); every answer must still match the per-candidate functions.
    rng = random.Random(5)
    vocab = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda"]
    contents = [" ".join(rng.choice(vocab) for _ in range(rng.randint(100, 180))) for _ in range(300)]
    index, padded = token_index_of(contents), padded_index_of(contents)
    assert len(index.buf) > 3 * 65_536
    for term in vocab:
        assert index.has(term).tolist() == [term in tokens(c) for c in contents], term
    for a, b in itertools.pairwise(vocab):
        assert padded.has([a, b]).tolist() == [f" {a} {b} " in words(c) for c in contents], (a, b)


def test_hash_is_the_documented_polynomial() -> None:
    p = 0x9E3779B97F4A7C15
    assert word_hash(b"ab") == (ord("a") + ord("b") * p) % 2**64
    assert word_hash(b"") == 0
