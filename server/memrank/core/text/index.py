"""A batch's words as numpy columns: which candidates hold a word or a phrase, without a Python loop per candidate.

A ``WordIndex`` holds, for every word of one normalisation of a batch
(``buffers`` builds them), in order: its 64-bit hash (``hashing``), its byte
offset and length in one buffer of all the candidates' normalised words
(UTF-8, separators as NUL bytes), and the candidate that owns it. A question
("which candidates contain the phrase 'i prefer'?") is a few comparisons over
these columns; every hash match is then checked byte for byte, so a hash
collision can never make a false match.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memrank.core.text.hashing import P, WordTable, word_hash, word_key

_VECTOR_CHUNKS = 8  # words of up to 64 bytes are hashed column-wise; longer ones (rare) in Python
# _LOW[k] keeps the low k bytes of a little-endian 8-byte chunk (k = 0..8).
_LOW = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)


class WordIndex:
    """Every word of one normalisation of a batch, as columns (see the module docstring)."""

    def __init__(self, buf: bytes, seg_starts: np.ndarray, n: int) -> None:
        self.n = n
        # One padded copy, kept: 8 spare zero bytes after the text, so every word's 8-byte chunks exist.
        self.buf = buf + bytes(8)
        a = np.frombuffer(self.buf, dtype=np.uint8)
        self._bytes = a
        inside = a != 0
        change = np.empty(a.size, dtype=bool)  # a boolean mask: nonzero() has a fast path for bool only
        change[0] = inside[0]
        np.not_equal(inside[1:], inside[:-1], out=change[1:])
        del inside
        changes = np.flatnonzero(change)  # word starts and ends alternate, a start first
        del change
        # Offsets fit 32 bits (a batch's samples are far below 2 GiB): half the memory of the default int64.
        starts = changes[0::2].astype(np.int32)
        lengths = (changes[1::2] - changes[0::2]).astype(np.int32)
        del changes
        self.starts, self.lengths = starts, lengths
        chunks = self._chunks()
        hashes = chunks[starts] & _LOW[np.minimum(lengths, 8)]
        with np.errstate(over="ignore"):
            for chunk in range(1, _VECTOR_CHUNKS):
                longer = np.flatnonzero(lengths > 8 * chunk)
                if not longer.size:
                    break
                rest = np.minimum(lengths[longer] - 8 * chunk, 8)
                part = chunks[starts[longer] + 8 * chunk] & _LOW[rest]
                hashes[longer] = hashes[longer] * np.uint64(P) + part
        for k in np.flatnonzero(lengths > 8 * _VECTOR_CHUNKS).tolist():
            hashes[k] = word_hash(self.buf[starts[k]:starts[k] + lengths[k]])
        self.hashes = hashes
        first = np.searchsorted(starts, seg_starts)
        self.first = first  # index of each candidate's first word
        self.counts = np.diff(np.append(first, starts.size))  # words per candidate
        self._owner: np.ndarray | None = None
        self._positions: dict[str, np.ndarray] = {}
        self._listed: dict[str, tuple[tuple[np.ndarray, np.ndarray], int]] = {}  # word -> present_listed's hits
        self.same_as_padded = False  # a tokens index whose words are also the padded words (``token_index``)

    def _chunks(self) -> np.ndarray:
        """The 8 bytes from every offset, as one little-endian uint64 each (an unaligned view, no copy)."""
        return np.ndarray(shape=(self._bytes.size - 7,), dtype="<u8", buffer=self._bytes, strides=(1,))

    @property
    def owner(self) -> np.ndarray:
        """The candidate owning each word (int32, made on first use)."""
        if self._owner is None:
            self._owner = np.repeat(np.arange(self.n, dtype=np.int32), self.counts)
        return self._owner

    def present_listed(self, table: WordTable) -> np.ndarray:
        """Per word of a ``word_table``, whether the batch holds it (exactly: hash, length and bytes): one
        lookup of every word's hash in the constant table, no table built per call.

        The positions found are kept: the ``positions`` of a listed word asked next (a rule's phrase words)
        are picked from them, not from a scan of every word's hash.
        """
        at, k = self.listed_hits(table)
        present = np.zeros(table.hashes.size, dtype=bool)
        present[k] = True
        hits = (at, k)
        for w, word in enumerate(table.words):
            self._listed.setdefault(word, (hits, w))
        return present

    def verified(self, at: np.ndarray, word: bytes) -> np.ndarray:
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
            raw, h = word_key(word)
            listed = self._listed.get(word)
            if listed is not None:  # among the exact hits of a listed word table
                (at, k), w = listed
                found = at[k == w]
            elif not raw:
                found = np.zeros(0, dtype=np.int64)
            else:  # one scan of the hashes (no sort for a few words: the scan answers absence too)
                found = self.verified((self.hashes == np.uint64(h)).nonzero()[0], raw)
            self._positions[word] = found
        return found

    def phrase_positions(self, phrase: Sequence[str]) -> np.ndarray:
        """Positions of the first word of each occurrence of consecutive words within one candidate."""
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

    def listed_hits(self, table: WordTable) -> tuple[np.ndarray, np.ndarray]:
        """(positions, listed word index) of every position holding a word of the table, exactly: each
        position's hash picks one slot of the collision-free table; a hit is exact when both words are at
        most 8 bytes and of one length (``word_hash``), otherwise its bytes are compared."""
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
                keep[mine] = np.isin(at[mine], self.verified(at[mine], table.raws[w]))
            at, k = at[keep], k[keep]
        return at, k

    def word_at(self, position: int) -> str:
        """The word at a position, decoded as ``hashing.encode`` stored it."""
        start = int(self.starts[position])
        raw = self.buf[start:start + int(self.lengths[position])]
        return raw.replace(b"\xff", b"\0").decode("utf-8", "surrogatepass")

    def starting_with_any(self, prefixes: Sequence[bytes]) -> np.ndarray:
        """Positions of the words whose bytes begin with one of the prefixes (1 or 2 bytes each), in order.

        Each word's first two bytes, little-endian (a byte past the word's end is its separator, 0, which no word
        holds), are compared with each prefix: a few comparisons over a column (a table lookup per word costs
        more). The column is two bytes a word, gathered here and not kept (a kept 8-byte column of each word's
        head was 12.5 MiB of the largest request's peak).
        """
        pairs = np.ndarray(shape=(self._bytes.size - 1,), dtype="<u2", buffer=self._bytes, strides=(1,))
        low = pairs[self.starts]
        hit = np.zeros(low.size, dtype=bool)
        for prefix in dict.fromkeys(prefixes):
            if not 1 <= len(prefix) <= 2:
                raise ValueError(f"a prefix of 1 or 2 bytes, not {prefix!r}")
            want = np.uint16(int.from_bytes(prefix, "little"))
            hit |= (low if len(prefix) == 2 else low & np.uint16(0xFF)) == want
        return np.flatnonzero(hit)

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
        if not at.size:
            return np.zeros(self.n, dtype=bool)
        return self.holders(at[at == self.first[self.owner[at]]])
