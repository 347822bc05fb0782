"""The text indexes of a batch: each candidate's sample normalised into one buffer, indexed once per batch.

Two normalisations of each candidate's head/tail sample (``words.sample``)
are indexed:

- ``tokens``: the ``words.tokens`` of the sample (``\\w+`` runs of the
  lower-cased text, at most ``MAX_TOKENS``, head and tail), what lexical
  overlap and the injection pre-scan read;
- ``padded``: the words of ``words.padded_words`` (case-folded,
  punctuation and white space as separators), what the phrase rules read.

All-ASCII samples (the usual case) are normalised for the whole batch at once
by one ``bytes.translate``; other samples go through ``tokens`` /
``padded_words`` one at a time, so both give exactly the words of the
per-candidate functions. A batch's indexes are built on first use and kept in
the batch's ``memo`` (``core.batch.Memo``), so they live exactly as long as the batch.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from memrank.core.text.hashing import encode
from memrank.core.text.index import WordIndex
from memrank.core.text.words import MAX_TOKENS, PUNCT_CHARS, padded_words, sample, tokens

if TYPE_CHECKING:  # the batch carries the indexes; only its type is needed here
    from memrank.core.batch import Batch

# ASCII byte -> normalised byte, 0 = separator. tokens: \w is [A-Za-z0-9_] on ASCII text, lower-cased.
# padded: white space and punctuation separate; every other byte is part of a word, lower-cased (a NUL
# inside a word is stored as 0xFF, a byte no UTF-8 text holds, so it is not taken for a separator).
_TOK = bytes(ord(chr(b).lower()) if chr(b).isalnum() or b == ord("_") else 0 for b in range(128)) + bytes(128)
_PAD = bytes(0 if chr(b) in PUNCT_CHARS or chr(b).isspace() else (0xFF if b == 0 else ord(chr(b).lower()))
             for b in range(128)) + bytes(128)


def _assemble(samples: Sequence[str], table: bytes, bulk: Sequence[bool],
              part: Callable[[str], bytes]) -> tuple[bytes, np.ndarray]:
    """The index buffer of the samples (NUL between samples) and each sample's offset.

    Each run of consecutive samples marked ``bulk`` (ASCII, normalised byte for byte by ``table``) is
    joined by spaces, a separator in both normalisations, and translated at once; any other sample is
    normalised alone by ``part``.
    """
    chunks: list[bytes] = []
    lengths: list[int] = []
    at = 0
    for together, run in itertools.groupby(bulk):
        size = len(list(run))
        texts = samples[at:at + size]
        at += size
        if together:
            chunks.append(" ".join(texts).encode("ascii").translate(table))
            lengths += map(len, texts)
        else:
            parts = [part(t) for t in texts]
            chunks += parts
            lengths += map(len, parts)
    return b"\0".join(chunks), _offsets(np.array(lengths, dtype=np.int64))


def _offsets(lengths: np.ndarray) -> np.ndarray:
    """Where each of the texts starts when they are joined with one separator byte between them."""
    offsets = np.zeros(lengths.size, dtype=np.int64)
    np.cumsum(lengths[:-1] + 1, out=offsets[1:])
    return offsets


def _token_part(s: str) -> bytes:
    return b"\0".join(map(encode, tokens(s)))


def _padded_part(s: str) -> bytes:
    return b"\0".join(map(encode, padded_words(s).split()))


def token_index_of(contents: Sequence[str]) -> WordIndex:
    """The ``tokens`` index of the given texts."""
    samples = [sample(c) for c in contents]
    # <= 2 * MAX_TOKENS characters hold <= MAX_TOKENS tokens: the ASCII translation is all of ``tokens``.
    bulk = [t.isascii() and len(t) <= 2 * MAX_TOKENS for t in samples]
    buf, offsets = _assemble(samples, _TOK, bulk, _token_part)
    return WordIndex(buf, offsets, len(samples))


def padded_index_of(contents: Sequence[str]) -> WordIndex:
    """The ``padded`` index of the given texts."""
    samples = [sample(c) for c in contents]
    buf, offsets = _assemble(samples, _PAD, [t.isascii() for t in samples], _padded_part)
    return WordIndex(buf, offsets, len(samples))


def _plain_of(batch: Batch) -> tuple[bytes, np.ndarray] | None:
    contents = batch.contents
    joined = " ".join(contents)  # a space is a separator in both normalisations
    if not joined.isascii() or max(map(len, contents), default=0) > 2 * MAX_TOKENS:
        return None
    return joined.encode("ascii"), _offsets(np.fromiter(map(len, contents), dtype=np.int64, count=len(contents)))


def ascii_joined(batch: Batch) -> tuple[bytes, np.ndarray] | None:
    """Every content joined by spaces as ASCII bytes, and each one's offset: when every content is ASCII and
    at most 2 * MAX_TOKENS characters (so it is its own sample and its tokens are all of it); else None."""
    result: tuple[bytes, np.ndarray] | None = batch.memo.get("ascii_joined", lambda: _plain_of(batch))
    return result


def token_index(batch: Batch) -> WordIndex:
    """The batch's ``tokens`` index, built once per batch."""
    def build(batch: Batch) -> WordIndex:
        joined = ascii_joined(batch)
        if joined is None:
            return token_index_of(batch.contents)
        # Translated with the bytes on which the two normalisations differ marked >= 0x80 (no ASCII text
        # holds such a byte): when none is there (isascii, a fast test), this buffer is the padded one too.
        marked = joined[0].translate(_TOK_MARKED)
        same = marked.isascii()
        index = WordIndex(marked if same else marked.translate(_UNMARK), joined[1], batch.n)
        index.same_as_padded = same
        return index

    index: WordIndex = batch.memo.get("token_index", lambda: build(batch))
    return index


def padded_index(batch: Batch) -> WordIndex:
    """The batch's ``padded`` index, built once per batch.

    Short ASCII text without "_" or control characters has the same words in both normalisations; then
    the tokens index serves both.
    """
    def build(batch: Batch) -> WordIndex:
        if ascii_joined(batch) is not None and token_index(batch).same_as_padded:
            return token_index(batch)
        return padded_index_of(batch.contents)

    index: WordIndex = batch.memo.get("padded_index", lambda: build(batch))
    return index


# The ASCII bytes on which the two normalisations differ ("_" and most control characters).
_DIFFERENT = bytes(b for b in range(128) if (_TOK[b] == 0) != (_PAD[b] == 0))
# _TOK with those bytes marked: a word byte of tokens as 0x80, a separator of tokens as 0x81; _UNMARK undoes it.
_TOK_MARKED = bytes((0x80 if _TOK[b] else 0x81) if b in _DIFFERENT else _TOK[b] for b in range(256))
_UNMARK = bytes(range(128)) + bytes([ord("_"), 0]) + bytes(range(130, 256))


def release_indexes(batch: Batch) -> None:
    """Let go of the batch's text indexes (``Memo.forget``), once scoring is done and selection will not read
    them: at 400 x 384 they are a fifth of a call's peak, beside the similarity's own matrix."""
    batch.memo.forget(("ascii_joined", "token_index", "padded_index"))


def short_ascii(batch: Batch) -> np.ndarray:
    """(n,) mask: ASCII content of at most 2 * MAX_TOKENS characters, so its tokens index is all of it."""
    if ascii_joined(batch) is not None:
        return np.ones(batch.n, dtype=bool)
    return np.fromiter((c.isascii() and len(c) <= 2 * MAX_TOKENS for c in batch.contents), dtype=bool,
                       count=batch.n)
