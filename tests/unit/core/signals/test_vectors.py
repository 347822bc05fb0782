"""The shared float64 embedding columns give the bits of the forms they replace."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import memrank
from memrank.core.batch import CandidateInput, batch_from_rows
from memrank.core.signals.vectors import float64_squares, seed_dots, squared_norms


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


def test_squares_are_the_float64_copys_computed_once() -> None:
    batch, emb = _batch(6, 16, 1)
    e = emb.astype(np.float64)
    assert float64_squares(batch).tobytes() == np.einsum("ij,ij->i", e, e).tobytes()
    assert float64_squares(batch) is float64_squares(batch)
    assert not float64_squares(batch).flags.writeable


# Around the block edges: one block, a one-row tail (merged), short and long tails, wide rows (few rows a block).
SHAPES = [(1, 3), (2, 384), (63, 31), (64, 384), (65, 384), (128, 384), (129, 384), (130, 384), (385, 384), (257, 8),
          (400, 384), (1000, 385), (1601, 384), (65, 4096), (700, 4096), (130, 9000)]
# Run with one BLAS thread, as every memrank process does (memrank.system.defaults): with several, OpenBLAS splits a
# large product between its threads and the bits of the whole-matrix product itself depend on the split.
_COMPARE = """
import sys
import numpy as np
from memrank.core.batch import CandidateInput, batch_from_rows
from memrank.core.signals.vectors import float64_squares, seed_dots
for n, dim in %r:
    rng = np.random.default_rng(n + dim)
    emb = (rng.standard_normal((n, dim)) * (1e-3 if dim %% 2 else 1.0)).astype(np.float32)
    batch = batch_from_rows([CandidateInput(id=f"c{i}", content="x", embedding=tuple(emb[i].tolist()))
                             for i in range(n)])
    e = emb.astype(np.float64)
    seeds = sorted({0, n // 2, n - 1})
    dots = seed_dots(batch, seeds)
    same = dots.shape == (len(seeds), n) and all(dots[k].tobytes() == (e @ e[s]).tobytes()
                                                 for k, s in enumerate(seeds))
    if not same or float64_squares(batch).tobytes() != np.einsum("ij,ij->i", e, e).tobytes():
        print("differs", n, dim)
print("done")
"""


def test_seed_dots_are_the_products_over_the_whole_float64_copy() -> None:
    """Bit for bit ``e @ e[s]`` and the row einsum over the whole float64 copy made at once (the form it
    replaces), at shapes around the block edges."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(Path(memrank.__file__).parents[1]), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", _COMPARE % (SHAPES,)], env=env, capture_output=True, text=True,
                         timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["done"]


def test_the_float64_copy_is_not_kept_by_the_batch() -> None:
    """The batch lives until the response is written: it keeps the n squared norms, never the n x dim copy."""
    batch, _ = _batch(300, 384, 2)
    seed_dots(batch, [1, 2])
    squares = float64_squares(batch)
    assert seed_dots(batch, [3]).shape == (1, 300) and float64_squares(batch) is squares  # computed once
    assert not any(isinstance(v, np.ndarray) and v.ndim == 2 for v in batch.memo.values())
