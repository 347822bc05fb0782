"""A batch's words as numpy columns: which candidates hold a word or a phrase, without a Python loop per candidate.

Two normalisations of each candidate's head/tail sample (``text.sample``)
are indexed:

- ``tokens``: the ``text.tokens`` of the sample (``\\w+`` runs of the
  lower-cased text, at most ``MAX_TOKENS``, head and tail), what lexical
  overlap and the injection pre-scan read;
- ``padded``: the words of ``phrases.words`` (case-folded, punctuation and
  white space as separators), what the phrase rules read.

Each index holds, for every word of the batch in order: its 64-bit
polynomial hash, its byte offset and length in one buffer of all the
candidates' normalised words (UTF-8, separators as NUL bytes), and the
candidate that owns it. A question ("which candidates contain the phrase
'i prefer'?") is a few comparisons over these columns; every hash match is
then checked byte for byte, so a hash collision can never make a false match.

All-ASCII samples (the usual case) are normalised for the whole batch at once
by one ``bytes.translate``; other samples go through ``text.tokens`` /
``phrases.words`` one at a time, so both give exactly the words of the
per-candidate functions.
"""

from __future__ import annotations

import functools
import itertools
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memrank.core.batch import Batch
from memrank.core.text import MAX_TOKENS, sample, tokens

_PUNCT_CHARS = "!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~'’‘“”«»—–…¡¿"  # phrases._PUNCT_CHARS (ASCII part used here)

# ASCII byte -> normalised byte, 0 = separator. tokens: \w is [A-Za-z0-9_] on ASCII text, lower-cased.
# padded: white space and punctuation separate; every other byte is part of a word, lower-cased (a NUL
# inside a word is stored as 0xFF, a byte no UTF-8 text holds, so it is not taken for a separator).
_TOK = bytes(ord(chr(b).lower()) if chr(b).isalnum() or b == ord("_") else 0 for b in range(128)) + bytes(128)
_PAD = bytes(0 if chr(b) in _PUNCT_CHARS or chr(b).isspace() else (0xFF if b == 0 else ord(chr(b).lower()))
             for b in range(128)) + bytes(128)

_MASK = (1 << 64) - 1
_P = 0x9E3779B97F4A7C15  # odd multiplier of the chunk combination
_VECTOR_CHUNKS = 8  # words of up to 64 bytes are hashed column-wise; longer ones (rare) in Python
# _LOW[k] keeps the low k bytes of a little-endian 8-byte chunk (k = 0..8).
_LOW = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [_MASK], dtype=np.uint64)


def word_hash(word: bytes) -> int:
    """The hash the index stores for a word's bytes.

    The word's 8-byte little-endian chunks c0, c1, ... (the last zero-padded), combined as
    h = c0, then h = h * P + c modulo 2**64 for each further chunk. A word of at most 8 bytes is
    its own packed value: no two such words share a hash (no word holds a zero byte).
    """
    h = int.from_bytes(word[:8], "little")
    for at in range(8, len(word), 8):
        h = (h * _P + int.from_bytes(word[at:at + 8], "little")) & _MASK
    return h


def encode(word: str) -> bytes:
    """A word as the index stores it (UTF-8, lone surrogates kept, NUL as 0xFF)."""
    return word.encode("utf-8", "surrogatepass").replace(b"\0", b"\xff")


@functools.lru_cache(maxsize=4096)
def _key(word: str) -> tuple[bytes, int]:
    """(bytes, hash) of a word; the rule phrases' words are asked for again and again."""
    raw = encode(word)
    return raw, word_hash(raw)


@dataclass(frozen=True)
class _Table:
    """A collision-free hash table of a word list: ``slots[(h * multiplier) >> shift]`` is the index of the
    listed word whose hash is h, if any (a candidate only: the caller compares the hash and the length)."""

    multiplier: np.uint64
    shift: np.uint64
    slots: np.ndarray  # int32 (2 ** bits,): word index or -1
    hashes: np.ndarray  # uint64 per listed word
    sizes: np.ndarray  # int64 byte length per listed word (0: never matches)
    raws: tuple[bytes, ...]


# word_ids looks up this many words or fewer one by one (a pass over the hashes each), more in one pass.
_FEW = 8
# Odd 64-bit multipliers tried in turn for a table without two words in one slot.
_MULTIPLIERS = tuple((0x9E3779B97F4A7C15 * (2 * k + 1)) & _MASK | 1 for k in range(64))


@functools.lru_cache(maxsize=512)
def _table(words: tuple[str, ...]) -> _Table | None:
    """The table of a word list (rule lists are constant, so each is built once); None when two listed
    words share a hash."""
    keys = [_key(w) for w in words]
    hashes = [h for _, h in keys]
    if len(set(hashes)) != len(hashes):
        return None
    sizes = np.array([len(raw) for raw, _ in keys], dtype=np.int64)
    table = np.array(hashes, dtype=np.uint64)
    bits = max(4, (len(words) ** 2).bit_length() + 1)  # slots >= 2 * words ** 2: most multipliers fit at once
    while True:
        for m in _MULTIPLIERS:
            slot = (table * np.uint64(m)) >> np.uint64(64 - bits)
            if np.unique(slot).size == slot.size:
                slots = np.full(1 << bits, -1, dtype=np.int32)
                slots[slot] = np.arange(len(words))
                return _Table(np.uint64(m), np.uint64(64 - bits), slots, table, sizes,
                              tuple(raw for raw, _ in keys))
        bits += 1


class WordIndex:
    """Every word of one normalisation of a batch, as columns (see the module docstring)."""

    def __init__(self, buf: bytes, seg_starts: np.ndarray, n: int) -> None:
        self.n = n
        self.buf = buf
        a = np.frombuffer(buf + bytes(8), dtype=np.uint8)  # 8 spare zero bytes: every word's chunks exist
        self._bytes = a
        inside = a != 0
        change = np.empty(a.size, dtype=bool)  # a boolean mask: nonzero() has a fast path for bool only
        change[0] = inside[0]
        np.not_equal(inside[1:], inside[:-1], out=change[1:])
        changes = np.flatnonzero(change)  # word starts and ends alternate, a start first
        starts, ends = changes[0::2], changes[1::2]
        lengths = ends - starts
        self.starts, self.lengths = starts, lengths
        # The 8 bytes from every offset, as one little-endian uint64 each (an unaligned view, no copy).
        chunks = np.ndarray(shape=(a.size - 7,), dtype="<u8", buffer=a, strides=(1,))
        hashes = chunks[starts] & _LOW[np.minimum(lengths, 8)]
        with np.errstate(over="ignore"):
            for chunk in range(1, _VECTOR_CHUNKS):
                longer = np.flatnonzero(lengths > 8 * chunk)
                if not longer.size:
                    break
                rest = np.minimum(lengths[longer] - 8 * chunk, 8)
                part = chunks[starts[longer] + 8 * chunk] & _LOW[rest]
                hashes[longer] = hashes[longer] * np.uint64(_P) + part
        for k in np.flatnonzero(lengths > 8 * _VECTOR_CHUNKS).tolist():
            hashes[k] = word_hash(buf[starts[k]:ends[k]])
        self.hashes = hashes
        first = np.searchsorted(starts, seg_starts)
        self.first = first  # index of each candidate's first word
        self.counts = np.diff(np.append(first, starts.size))  # words per candidate
        self.owner = np.repeat(np.arange(n), self.counts)
        self._distinct: np.ndarray | None = None
        self._positions: dict[str, np.ndarray] = {}
        self._seen: dict[int, bool] = {}  # hash -> some word has it
        self.same_as_padded = False  # a tokens index whose words are also the padded words (``token_index``)

    def present_hashes(self, hashes: np.ndarray) -> np.ndarray:
        """Per hash, whether some word of the batch has it (a superset of the words present)."""
        if self._distinct is None:
            self._distinct = np.sort(self.hashes)  # repeats do no harm to a presence test
        k = np.minimum(np.searchsorted(self._distinct, hashes), max(self._distinct.size - 1, 0))
        return np.asarray(self._distinct[k] == hashes) if self._distinct.size else np.zeros(hashes.size, bool)

    def learn(self, words: Sequence[str]) -> np.ndarray:
        """Look up many words' presence in one vectorised step (later questions about them are free).

        Returns, per word, whether some word of the batch has its hash (a superset of the words present).
        """
        keys = [_key(w)[1] for w in words]
        present = self.present_hashes(np.array(keys, dtype=np.uint64))
        self._seen.update(zip(keys, present.tolist(), strict=True))
        return present

    def _verified(self, at: np.ndarray, word: bytes) -> np.ndarray:
        """The word positions in ``at`` (where the hash is ``word``'s) whose bytes are exactly ``word``."""
        at = at[self.lengths[at] == len(word)]
        # Up to 8 bytes, a word is its own hash (``word_hash``) and equal lengths leave no other word with
        # that hash: the hash match is the byte match. Longer words are compared byte for byte.
        if at.size and len(word) > 8:
            want = np.frombuffer(word, dtype=np.uint8)
            got = self._bytes[self.starts[at][:, None] + np.arange(len(word))]
            at = at[(got == want).all(axis=1)]
        return at

    def positions(self, word: str) -> np.ndarray:
        """Positions (word numbers) where the word occurs."""
        found = self._positions.get(word)
        if found is None:
            raw, h = _key(word)
            if not raw or self._seen.get(h) is False:  # learned absent
                found = np.zeros(0, dtype=np.int64)
            else:  # one scan of the hashes (no sort for a few words: the scan answers absence too)
                found = self._verified((self.hashes == np.uint64(h)).nonzero()[0], raw)
            self._positions[word] = found
        return found

    def phrase_positions(self, phrase: Sequence[str]) -> np.ndarray:
        """Positions of the first word of each occurrence of consecutive words within one candidate."""
        if any(self._seen.get(_key(w)[1]) is False for w in phrase):  # a word learned absent
            return np.zeros(0, dtype=np.int64)
        at = self.positions(phrase[0])
        for j, word in enumerate(phrase[1:], 1):
            if not at.size:
                break
            # Both position lists are sorted: a binary search of one in the other, over these few only.
            found = self.positions(word)
            nxt = at + j
            k = np.minimum(np.searchsorted(found, nxt), max(found.size - 1, 0))
            at = at[(found[k] == nxt) & (self.owner[np.minimum(nxt, self.hashes.size - 1)] == self.owner[at])] \
                if found.size else found
        return at

    def word_ids(self, words: Sequence[str]) -> np.ndarray:
        """Per word position, the index in ``words`` of the word found there, else -1 (one pass for all words).

        ``words`` must be distinct. Each position's hash picks one slot of a small collision-free table
        of the words' hashes (``_Table``); a hit is exact when both words are at most 8 bytes and of one
        length (``word_hash``), otherwise its bytes are compared, so a hash collision can never make a
        false match.
        """
        out = np.full(self.hashes.size, -1, dtype=np.int64)
        if not words or not self.hashes.size:
            return out
        table = _table(tuple(words)) if len(words) > _FEW else None
        if table is None:  # few words to find, or two share a hash: word by word
            for k in reversed(range(len(words))):  # a word listed twice keeps its first index
                out[self.positions(words[k])] = k
            return out
        slot = table.slots[(self.hashes * table.multiplier) >> table.shift]
        at = (slot >= 0).nonzero()[0]
        k = slot[at]
        same = (table.hashes[k] == self.hashes[at]) & (table.sizes[k] == self.lengths[at])
        at, k = at[same], k[same]
        long_ = np.flatnonzero(table.sizes[k] > 8)
        if long_.size:  # rare: compare the bytes of every hit of a word longer than 8 bytes
            keep = np.ones(at.size, dtype=bool)
            for w in np.unique(k[long_]).tolist():
                mine = long_[k[long_] == w]
                keep[mine] = np.isin(at[mine], self._verified(at[mine], table.raws[w]))
            at, k = at[keep], k[keep]
        out[at] = k
        return out

    def holding_digits(self) -> np.ndarray:
        """(n,) mask: some word of the candidate holds an ASCII digit."""
        body = self._bytes[:-8]
        at = np.flatnonzero((body >= ord("0")) & (body <= ord("9")))
        return self.holders(np.searchsorted(self.starts, at, side="right") - 1)

    def holders(self, at: np.ndarray) -> np.ndarray:
        """(n,) mask of the candidates owning the given word positions."""
        mask = np.zeros(self.n, dtype=bool)
        mask[self.owner[at]] = True
        return mask

    def has(self, phrase: str | Sequence[str]) -> np.ndarray:
        """(n,) mask: the candidate holds the word, or the words in a row (a phrase given as a word list)."""
        words = phrase.split() if isinstance(phrase, str) else phrase
        return self.holders(self.phrase_positions(words)) if words else np.zeros(self.n, dtype=bool)

    def opens_with(self, phrase: Sequence[str]) -> np.ndarray:
        """(n,) mask: the candidate's words begin with the phrase."""
        at = self.phrase_positions(phrase)
        return self.holders(at[at == self.first[self.owner[at]]])


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
    from memrank.core.phrases import words  # phrases imports this module for its matchers

    return b"\0".join(map(encode, words(s).split()))


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


# id(batch) -> its indexes, for exactly as long as the batch lives (a finalizer drops the entry when the
# batch is freed, before its id can be reused). Pure memo: scoring one batch reads them several times.
_TOKEN: dict[int, WordIndex] = {}
_PADDED: dict[int, WordIndex] = {}
_PLAIN: dict[int, tuple[bytes, np.ndarray] | None] = {}


def _memo(table: dict[int, Any], batch: Batch, build: Callable[[Batch], Any]) -> Any:
    key = id(batch)
    if key in table:
        return table[key]
    found = table[key] = build(batch)
    weakref.finalize(batch, table.pop, key, None)
    return found


def _plain_of(batch: Batch) -> tuple[bytes, np.ndarray] | None:
    contents = batch.contents
    joined = " ".join(contents)  # a space is a separator in both normalisations
    if not joined.isascii() or max(map(len, contents), default=0) > 2 * MAX_TOKENS:
        return None
    return joined.encode("ascii"), _offsets(np.fromiter(map(len, contents), dtype=np.int64, count=len(contents)))


def ascii_joined(batch: Batch) -> tuple[bytes, np.ndarray] | None:
    """Every content joined by spaces as ASCII bytes, and each one's offset: when every content is ASCII and
    at most 2 * MAX_TOKENS characters (so it is its own sample and its tokens are all of it); else None."""
    result: tuple[bytes, np.ndarray] | None = _memo(_PLAIN, batch, _plain_of)
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

    index: WordIndex = _memo(_TOKEN, batch, build)
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

    index: WordIndex = _memo(_PADDED, batch, build)
    return index


# The ASCII bytes on which the two normalisations differ ("_" and most control characters).
_DIFFERENT = bytes(b for b in range(128) if (_TOK[b] == 0) != (_PAD[b] == 0))
# _TOK with those bytes marked: a word byte of tokens as 0x80, a separator of tokens as 0x81; _UNMARK undoes it.
_TOK_MARKED = bytes((0x80 if _TOK[b] else 0x81) if b in _DIFFERENT else _TOK[b] for b in range(256))
_UNMARK = bytes(range(128)) + bytes([ord("_"), 0]) + bytes(range(130, 256))


def short_ascii(batch: Batch) -> np.ndarray:
    """(n,) mask: ASCII content of at most 2 * MAX_TOKENS characters, so its tokens index is all of it."""
    if ascii_joined(batch) is not None:
        return np.ones(batch.n, dtype=bool)
    return np.fromiter((c.isascii() and len(c) <= 2 * MAX_TOKENS for c in batch.contents), dtype=bool,
                       count=batch.n)
