"""Pairwise similarity for diversity: cosine of embeddings, else Jaccard of token shingles.

Embeddings are used when every candidate carries a non-zero one (mixing the
two measures would put them on one scale they do not share). Otherwise each
candidate is a set of word shingles (the 1- and 2-word runs of its head/tail
sample tokens, stop words kept so "not" still counts), and similarity is the
Jaccard index |A ∩ B| / |A ∪ B|, computed for one row at a time through an
inverted index so a pick costs O(postings), never a full n x n matrix.
"""

from __future__ import annotations

import numpy as np

from memrank.core.batch import Batch
from memrank.core.signals.vectors import squared_norms
from memrank.core.text.buffers import token_index
from memrank.core.text.index import WordIndex


def _exact_ids(index: WordIndex) -> np.ndarray:
    """An int64 id per word of the index, equal ids exactly for equal words (ids in [0, distinct words)).

    A word of at most 8 bytes is keyed by its own packed bytes (the index's hash of it, exact); the
    longer words, a minority in prose, get their ids from a dictionary of their bytes.
    """
    short = index.lengths <= 8
    hashes = index.hashes[short]
    # The rank of each hash among the distinct ones (np.unique's inverse, from one argsort: twice as fast). Each
    # column of a word each goes once read: at the largest request each is 12.5 MiB.
    order = np.argsort(hashes)
    ranked = hashes[order]
    del hashes
    new = np.empty(ranked.size, dtype=bool)
    new[:1] = True
    np.not_equal(ranked[1:], ranked[:-1], out=new[1:])
    del ranked
    inverse = np.empty(new.size, dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    del order
    ids = np.empty(index.hashes.size, dtype=np.int64)
    ids[short] = inverse
    del inverse
    longer = np.flatnonzero(~short)
    if longer.size:
        seen: dict[bytes, int] = {}
        buf, base = index.buf, int(new.sum())
        ids[longer] = [base + seen.setdefault(buf[at:at + size], len(seen))
                       for at, size in zip(index.starts[longer].tolist(), index.lengths[longer].tolist(),
                                           strict=True)]
    return ids


def _cosine_norms(batch: Batch) -> np.ndarray | None:
    """The squared embedding norms when similarity is the cosine (every candidate has a non-zero embedding),
    else None. Accumulated in float64 (a float32 sum of tiny values could underflow to 0; computed once per
    batch, ``signals.vectors``, as ``hop`` reads them too)."""
    if batch.embeddings is None or not batch.n:
        return None
    squares = squared_norms(batch)
    return squares if np.count_nonzero(squares > 0) == squares.size else None


def reads_text(batch: Batch, diversity_lambda: float) -> bool:
    """Whether selection's similarity reads the batch's token index: a diversity pass, and the Jaccard of shingles
    (some candidate without a non-zero embedding)."""
    return diversity_lambda < 1.0 and _cosine_norms(batch) is None


class Similarity:
    """Similarity rows over one batch, computed lazily per row."""

    def __init__(self, batch: Batch) -> None:
        self.n = batch.n
        self.kind = "none"
        self._rows: dict[int, np.ndarray] = {}
        self._unit: np.ndarray | None = None
        squares = _cosine_norms(batch)
        if squares is not None and batch.embeddings is not None:  # each row scaled in float32
            emb = batch.embeddings
            with np.errstate(over="ignore"):
                scale = (1.0 / np.sqrt(squares)).astype(np.float32)
            if np.count_nonzero(np.isfinite(scale)) == scale.size:
                self._unit = emb * scale[:, None]
            else:  # rows so small that 1 / norm overflows float32: divide in float64
                self._unit = (emb / np.sqrt(squares)[:, None]).astype(np.float32)
            self.kind = "cosine"
        if self._unit is None:
            self.kind = "shingle_jaccard"
            self._index_shingles(token_index(batch))  # every candidate's sample tokens (``text.words.tokens``)

    def _index_shingles(self, index: WordIndex) -> None:
        """An inverted index of every candidate's shingles, as flat numpy arrays.

        Shingles are numbered without building bigram strings: token t gets an
        exact id in [0, V), unigram t has id t, bigram (a, b) has id
        (a + 1) * V + b (tokens hold no space, so distinct pairs are distinct
        "a b" strings); duplicates within a candidate are removed after one
        sort of (shingle, candidate) keys, as ``shingles`` does with sets.
        """
        token = _exact_ids(index)
        n, words = self.n, token.size
        v = int(token.max(initial=-1)) + 1
        owner = np.repeat(np.arange(n, dtype=np.int32), index.counts)
        inside = owner[:-1] == owner[1:]  # adjacent tokens of one candidate form a bigram
        # The (shingle, candidate) keys, shingle * n + candidate, written in place into one array (unigrams, then
        # bigrams): its columns of a word each are made one at a time and go once used (at the largest request
        # each is 12.5 MiB, and the shingles' own columns built apart, then joined, were the call's peak).
        keys = np.empty(words + np.count_nonzero(inside), dtype=np.int64)
        uni, bi = keys[:words], keys[words:]
        np.multiply(token, n, out=uni)
        uni += owner
        np.add(token[:-1][inside], 1, out=bi)  # (np.compress into ``out`` buffers a copy of its own)
        bi *= v
        bi += token[1:][inside]
        del token
        bi *= n
        bi += owner[:-1][inside]
        del owner, inside, uni, bi
        # One sort by (shingle, candidate) gives the postings (candidates per shingle, ascending) and the
        # compact shingle ids 0, 1, ...; a repeated (shingle, candidate) pair is dropped, as a set does.
        keys.sort()
        keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))] if keys.size else keys
        sid, own = np.divmod(keys, self.n)
        del keys
        new = np.concatenate(([True], sid[1:] != sid[:-1])) if sid.size else sid.astype(bool)
        ids = np.cumsum(new) - 1
        # Each candidate's shingle ids together: a stable sort by candidate, a counting sort in numpy when
        # the candidate numbers fit 16 bits.
        by_candidate = np.argsort(own.astype(np.int16 if self.n <= 2**15 else np.int64), kind="stable")
        sizes = np.bincount(own, minlength=self.n).astype(np.int64)
        self._sizes = sizes.astype(np.float64)
        self._holders = own
        self._starts = np.concatenate((np.flatnonzero(new), [sid.shape[0]])).astype(np.int64)
        self._ids = ids[by_candidate]
        self._offsets = np.concatenate(([0], np.cumsum(sizes)))

    def row(self, i: int) -> np.ndarray:
        """Similarity of candidate i to every candidate, float64 in [0, 1] (cosine clipped at 0)."""
        # Budget release re-runs selection, which picks mostly the same memories again: rows are kept.
        found = self._rows.get(i)
        if found is None:
            found = self._rows[i] = self._row(i)
            found.setflags(write=False)
        return found

    def _row(self, i: int) -> np.ndarray:
        if self._unit is not None:
            # A BLAS matvec (about twice einsum's speed). Each dot product is computed whole by one kernel, so
            # the values do not depend on the BLAS thread count; `memrank serve` runs BLAS on one thread per
            # process (memrank.system.defaults), since several threads spin against the other workers on a busy host.
            dots = self._unit @ self._unit[i]
            cos: np.ndarray = dots.clip(0.0, 1.0, out=dots).astype(np.float64)  # np.clip without its wrappers
            return cos
        mine = self._ids[self._offsets[i]:self._offsets[i + 1]]
        if mine.size == 0:
            return np.zeros(self.n)
        starts, ends = self._starts[mine], self._starts[mine + 1]
        lengths = ends - starts
        # Every posting of i's shingles, gathered in one index array (concatenated ranges).
        positions = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))
        inter = np.bincount(self._holders[positions], minlength=self.n).astype(np.float64)
        union = self._sizes + self._sizes[i] - inter
        jaccard: np.ndarray = np.divide(inter, union, out=np.zeros(self.n), where=union > 0)
        return jaccard
