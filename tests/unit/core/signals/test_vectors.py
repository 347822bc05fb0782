"""The shared float64 embedding columns give the bits of the forms they replace."""

from __future__ import annotations

import numpy as np
import pytest

from memrank.core.batch import CandidateInput, batch_from_rows
from memrank.core.signals.vectors import float64_embeddings, float64_squares, squared_norms


def _batch(n: int, dim: int, seed: int, scale: float = 1.0):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    emb = (rng.standard_normal((n, dim)) * scale).astype(np.float32)
    rows = [CandidateInput(id=f"c{i}", content="x", embedding=tuple(emb[i].tolist())) for i in range(n)]
    return batch_from_rows(rows), emb


@pytest.mark.parametrize(("n", "dim", "scale"), [(1, 3, 1.0), (7, 31, 1e-20), (40, 384, 1.0), (5, 385, 1e18),
                                                 (3, 4096, 1.0), (2, 9000, 1.0)])
def test_squared_norms_are_the_float32_einsum_accumulated_in_float64(n: int, dim: int, scale: float) -> None:
    batch, emb = _batch(n, dim, dim, scale)
    want = np.einsum("ij,ij->i", emb, emb, dtype=np.float64)
    assert squared_norms(batch).tobytes() == want.tobytes()


def test_float64_columns_are_the_copy_and_its_squares_computed_once() -> None:
    batch, emb = _batch(6, 16, 1)
    e = emb.astype(np.float64)
    assert float64_embeddings(batch).tobytes() == e.tobytes()
    assert float64_squares(batch).tobytes() == np.einsum("ij,ij->i", e, e).tobytes()
    assert float64_squares(batch) is float64_squares(batch) and float64_embeddings(batch) is float64_embeddings(batch)
    assert not float64_embeddings(batch).flags.writeable and not float64_squares(batch).flags.writeable
