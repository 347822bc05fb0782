"""Embedding columns in float64: ``hop``'s dot products, and the squared norms it shares with the covering set's
similarity.

Both read every candidate's squared norm in float64, computed once per batch and kept (n values). The float64
copy of the matrix they come from (twice the float32 matrix, 1.2 MiB at 400 x 384: more than the request's
whole wire size) is never whole and never kept: it is made a block of rows at a time (``seed_dots``).

For the squared norms alone, ``np.einsum(..., dtype=np.float64)`` over the float32 embeddings casts them through
numpy's iterator buffer one chunk at a time, about five times the cost of one float64 copy and the contiguous
kernel; the two give the same bits as long as a row fits the buffer (``np.getbufsize()`` elements, 8192 by
default: past it the buffered form sums a row in two parts), so longer rows keep the buffered form.
"""

from __future__ import annotations

import itertools

import numpy as np

from memrank.core.batch import Batch

# numpy's iterator buffer, in elements (memrank never changes it; reading it per call costs a dict per call).
_BUFFER = np.getbufsize()


# Rows per block of ``seed_dots``: a multiple of 64 (so a row meets the same BLAS kernel, and the same place in
# its group of rows, as in one product over the whole matrix), about 256 KiB of float64 a block (64 rows at 384
# dims: a 512 KiB block, 128 rows, was the largest thing alive at 400 x 384, the call's peak).
_BLOCK_BYTES = 256 << 10


def _blocks(n: int, dim: int) -> list[tuple[int, int]]:
    """Row ranges covering 0..n: multiples of 64 rows but the last, which never has only one row (numpy takes
    another path for a one-row product); one range when the matrix is small."""
    rows = max(64, _BLOCK_BYTES // (8 * max(dim, 1)) // 64 * 64)
    if n <= rows + 1:
        return [(0, n)]
    cuts = [*range(0, n, rows), n]
    if cuts[-1] - cuts[-2] == 1:
        del cuts[-2]
    return list(itertools.pairwise(cuts))


def seed_dots(batch: Batch, seeds: list[int]) -> np.ndarray:
    """(len(seeds), n) float64: every candidate's float64 embedding dotted with each seed's (``e @ e[s]`` for
    ``e = embeddings.astype(np.float64)``), the squared norms kept on the way (``float64_squares``).

    The float64 copy is made a block of rows at a time and dropped with it: the whole copy (twice the float32
    matrix) was the largest thing alive during scoring. Bit for bit the products over the whole copy: each
    row's dot product is one BLAS kernel's, whatever the rows around it, when the blocks start at multiples
    of 64 rows and none has one row (``tests/unit/core/signals/test_vectors.py`` checks shapes around the
    edges; with one BLAS thread, as memrank runs: several threads split a product by their own rule).
    """
    emb = batch.embeddings
    assert emb is not None
    n, dim = emb.shape
    keep = "squares_f64" not in batch.memo
    blocks = _blocks(n, dim)
    if len(blocks) == 1:  # one block: the whole copy, as small as a block
        e = emb.astype(np.float64)
        out = np.array([e @ e[s] for s in seeds]) if seeds else np.empty((0, n))
        squares = np.einsum("ij,ij->i", e, e) if keep else None
    else:
        out = np.empty((len(seeds), n))
        seed_rows = emb[seeds].astype(np.float64)
        squares = np.empty(n) if keep else None
        for start, end in blocks:
            e = emb[start:end].astype(np.float64)
            for k in range(len(seeds)):
                out[k, start:end] = e @ seed_rows[k]
            if squares is not None:
                squares[start:end] = np.einsum("ij,ij->i", e, e)
            del e  # before the next block's copy is made, not after
    if squares is not None:
        squares.setflags(write=False)
        batch.memo.put("squares_f64", squares)
    return out


def float64_squares(batch: Batch) -> np.ndarray:
    """Each candidate's squared norm of its float64 embedding (``hop``'s definition), read-only, computed once
    per batch (the batch must carry embeddings)."""
    if "squares_f64" not in batch.memo:
        seed_dots(batch, [])
    held: np.ndarray = batch.memo.peek("squares_f64")
    return held


def squared_norms(batch: Batch) -> np.ndarray:
    """Each candidate's squared embedding norm accumulated in float64 (the similarity's definition), read-only.

    Bit for bit ``np.einsum("ij,ij->i", emb, emb, dtype=np.float64)`` of the float32 embeddings.
    """
    emb = batch.embeddings
    assert emb is not None
    if emb.shape[1] <= _BUFFER:
        return float64_squares(batch)
    held: np.ndarray = np.einsum("ij,ij->i", emb, emb, dtype=np.float64)
    return held
