"""Embedding columns in float64, computed once per batch: ``hop`` and the covering set's similarity share them.

Both read every candidate's squared norm in float64. ``np.einsum(..., dtype=np.float64)`` over the float32
embeddings casts them through numpy's iterator buffer one chunk at a time, about five times the cost of one
float64 copy and the contiguous kernel; the two give the same bits as long as a row fits the buffer
(``np.getbufsize()`` elements, 8192 by default: past it the buffered form sums a row in two parts), so longer
rows keep the buffered form.
"""

from __future__ import annotations

import numpy as np

from memrank.core.batch import Batch

# numpy's iterator buffer, in elements (memrank never changes it; reading it per call costs a dict per call).
_BUFFER = np.getbufsize()


def float64_embeddings(batch: Batch) -> np.ndarray:
    """The batch's embeddings as float64, read-only (the batch must carry embeddings)."""
    held: np.ndarray | None = batch.derived.get("embeddings_f64")
    if held is None:
        assert batch.embeddings is not None
        held = batch.derived["embeddings_f64"] = batch.embeddings.astype(np.float64)
        held.setflags(write=False)
    return held


def float64_squares(batch: Batch) -> np.ndarray:
    """Each candidate's squared norm of its float64 embedding (``hop``'s definition), read-only."""
    held: np.ndarray | None = batch.derived.get("squares_f64")
    if held is None:
        e = float64_embeddings(batch)
        held = batch.derived["squares_f64"] = np.einsum("ij,ij->i", e, e)
        held.setflags(write=False)
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
