"""The batch word index answers exactly what the per-candidate text functions answer."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memrank.core.text.buffers import padded_index_of, token_index_of
from memrank.core.text.hashing import word_hash, word_key, word_table
from memrank.core.text.index import WordIndex
from memrank.core.text.words import padded_words, tokens

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
    assert index.has(phrase).tolist() == [needle in padded_words(c) for c in contents]
    assert index.opens_with(phrase).tolist() == [padded_words(c).startswith(needle) for c in contents]


def test_long_texts_use_head_and_tail_tokens() -> None:
    middle = " ".join(f"w{k}" for k in range(3000))
    contents = ["start " + middle + " end", "short text here", "x" * 70_000 + " tail"]
    index = token_index_of(contents)
    for term in ("start", "end", "w10", "w1500", "w2990", "tail", "here"):
        assert index.has(term).tolist() == [term in tokens(c) for c in contents], term


def test_a_large_batch_matches_the_per_candidate_functions() -> None:
    # 300 candidates of ~1,000 characters, every vocabulary word and bigram asked for.
    rng = random.Random(5)
    vocab = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda"]
    contents = [" ".join(rng.choice(vocab) for _ in range(rng.randint(100, 180))) for _ in range(300)]
    index, padded = token_index_of(contents), padded_index_of(contents)
    for term in vocab:
        assert index.has(term).tolist() == [term in tokens(c) for c in contents], term
    for a, b in itertools.pairwise(vocab):
        assert padded.has([a, b]).tolist() == [f" {a} {b} " in padded_words(c) for c in contents], (a, b)


def test_hash_is_the_documented_chunk_combination() -> None:
    p = 0x9E3779B97F4A7C15
    assert word_hash(b"ab") == ord("a") + (ord("b") << 8)  # a short word is its packed bytes
    assert word_hash(b"") == 0
    nine = b"abcdefghi"
    assert word_hash(nine) == (int.from_bytes(b"abcdefgh", "little") * p + ord("i")) % 2**64


def test_words_of_every_length_are_found_exactly() -> None:
    # Lengths around the 8-byte chunks and past the 64 bytes hashed column-wise; near-identical words
    # (one byte apart at the end) must not be confused.
    words = ["x" * k for k in (1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 200)] + ["x" * 64 + "y", "y" + "x" * 64]
    contents = [" ".join(words[k:k + 3]) for k in range(0, len(words), 3)]
    index = token_index_of(contents)
    for word in [*words, "x" * 66, "x" * 10]:
        assert index.has(word).tolist() == [word in tokens(c) for c in contents], len(word)


@settings(max_examples=300, deadline=None)
@given(batches, st.lists(probes, max_size=8, unique=True))
def test_word_ids_give_each_position_the_listed_word_found_there(contents: list[str], listed: list[str]) -> None:
    for index in (token_index_of(contents), padded_index_of(contents)):
        expected = [-1] * index.hashes.size
        for k, word in enumerate(listed):
            for at in index.positions(word).tolist():
                expected[at] = k
        assert _word_ids(index, listed) == expected  # one table pass, as positions() finds each word


@settings(max_examples=300, deadline=None)
@given(batches, st.lists(probes, min_size=1, max_size=12, unique=True))
def test_present_listed_tells_which_listed_hashes_some_word_has(contents: list[str], listed: list[str]) -> None:
    table = word_table(tuple(listed))
    for index in (token_index_of(contents), padded_index_of(contents)):
        stored = set(index.hashes.tolist())
        assert index.present_listed(table).tolist() == [word_key(w)[1] in stored for w in listed]


def _word_ids(index: WordIndex, words: list[str]) -> list[int]:
    """Per word position, the index in ``words`` of the word there, else -1 (``listed_hits`` of their table)."""
    out = [-1] * index.hashes.size
    at, k = index.listed_hits(word_table(tuple(words)))
    for position, listed in zip(at.tolist(), k.tolist(), strict=True):
        out[position] = listed
    return out


def _colliding_long_word(short: bytes, seed: int = 11) -> bytes:
    """A 16-byte ASCII word (no zero byte) whose hash is ``short``'s, solved from the chunk combination."""
    p, target = 0x9E3779B97F4A7C15, word_hash(short)
    rng = random.Random(seed)
    while True:
        head = bytes(rng.randrange(97, 123) for _ in range(8))
        tail = ((target - int.from_bytes(head, "little") * p) % 2**64).to_bytes(8, "little")
        if all(0 < b < 128 and not chr(b).isspace() for b in tail):  # about 1 try in 300
            return head + tail


def test_a_hash_collision_never_makes_a_false_match() -> None:
    short = b"tea"
    long_ = _colliding_long_word(short)
    assert word_hash(long_) == word_hash(short) and long_ != short
    # Two candidates: the short word, then the long one (a hand-built buffer: NUL separates words).
    index = WordIndex(short + b"\0" + long_, np.array([0, len(short) + 1]), 2)
    word = long_.decode("ascii")
    assert _word_ids(index, ["tea"]) == [0, -1]
    assert _word_ids(index, [word]) == [-1, 0]
    with pytest.raises(ValueError, match="share a hash"):  # no table of two words that share a hash
        word_table(("tea", word))
    assert index.has("tea").tolist() == [True, False]
    assert index.has(word).tolist() == [False, True]

    # Two long words of one length and one hash: only the bytes tell them apart.
    other = _colliding_long_word(short, seed=12)
    assert other != long_ and len(other) == len(long_) and word_hash(other) == word_hash(long_)
    pair = WordIndex(long_ + b"\0" + other, np.array([0, len(long_) + 1]), 2)
    assert _word_ids(pair, [word]) == [0, -1]
    assert pair.has(word).tolist() == [True, False]


@settings(max_examples=300, deadline=None)
@given(batches, st.lists(st.sampled_from(["i", "p", "pr", "ca", "東", "\x01", "st", "_", "t"]), min_size=1, max_size=4))
def test_starting_with_any_finds_the_words_beginning_with_a_prefix(contents: list[str], prefixes: list[str]) -> None:
    raw = [p.encode("utf-8")[:2] for p in prefixes]
    for index in (token_index_of(contents), padded_index_of(contents)):
        words = [index.word_at(k).encode("utf-8", "surrogatepass") for k in range(index.hashes.size)]
        expected = [k for k, w in enumerate(words) if any(w.startswith(p) for p in raw)]
        assert index.starting_with_any(raw).tolist() == expected


@settings(max_examples=300, deadline=None)
@given(batches, st.lists(probes, min_size=1, max_size=12, unique=True), probes)
def test_positions_after_present_listed_are_the_scanned_positions(contents: list[str], listed: list[str],
                                                                   asked: str) -> None:
    table = word_table(tuple(listed))
    for make in (token_index_of, padded_index_of):
        scanned = make(contents)  # positions by a scan of the hashes (no table asked before)
        index = make(contents)
        index.present_listed(table)
        for word in (*listed, asked):
            assert index.positions(word).tolist() == scanned.positions(word).tolist()


def test_present_listed_and_its_positions_are_exact_under_a_hash_collision() -> None:
    short = b"tea"
    long_ = _colliding_long_word(short)
    index = WordIndex(long_ + b"\0" + b"cup", np.array([0, len(long_) + 1]), 2)
    table = word_table(("tea", "cup"))
    assert index.present_listed(table).tolist() == [False, True]  # the long word shares tea's hash only
    assert index.positions("tea").tolist() == [] and index.positions("cup").tolist() == [1]
    assert index.has("tea").tolist() == [False, False]
