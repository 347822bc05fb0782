"""Hop: a memory close to what best matches the query (a second hop within the request).

Evidence for a question is often spread over memories that do not all share
its words: "Where did Melanie camp?" matches the turn about camping plans,
and the answer is in another turn about the same trip. Within the request,
the memories most like the best matches are a second hop from the query.
Each population candidate j has the match ``context`` uses; the seeds are
the ``SEEDS`` population candidates with the largest match (ties to the lower
index), and the signal is a candidate's largest embedding cosine with a seed
other than itself::

    hop_i = max(0, max(cos(e_i, e_s) for s in seeds, s != i))

in [0, 1]. 0 for every candidate when the request has no embeddings (or
fewer than two population candidates), and for a candidate without one (a
zero row). Reasons name the seed.
"""

from __future__ import annotations

import numpy as np

from memrank.core.batch import Batch
from memrank.core.profile import Profile
from memrank.core.reasons import Lazy, Same
from memrank.core.signals.base import RawSignal, ScoringContext
from memrank.core.signals.context import match
from memrank.core.signals.vectors import float64_squares, seed_dots

SEEDS = 3


def seeds(value: np.ndarray, population: np.ndarray, k: int = SEEDS) -> np.ndarray:
    """The k population candidates with the largest value, ties to the lower index (fewer when there are fewer)."""
    rows = population.nonzero()[0]
    order = rows[np.lexsort((rows, -value[rows]))]
    return order[:k]


def hop(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """The largest cosine between each memory and one of the request's best matches (not itself)."""
    if batch.embeddings is None or batch.n < 2 or np.count_nonzero(population) < 2:
        return RawSignal(np.zeros(batch.n), Same(batch.n, "no embeddings or fewer than two candidates: no hop"))
    m = match(batch, ctx, profile, population)
    top = seeds(m, population)
    picked = top.tolist()
    dots = seed_dots(batch, picked)  # e @ e[s] of the float64 embeddings, without holding their whole copy
    norms = np.sqrt(float64_squares(batch))
    cos = np.full((batch.n, top.size), -np.inf)
    for k, s in enumerate(picked):
        # One BLAS matvec per seed, as the covering set's similarity rows: with one BLAS thread (the memrank
        # command's default, memrank.system.defaults) three matvecs take 0.20 ms at 1,600 x 384 against 0.40 ms for one
        # product against the seeds' columns. (An earlier note here blamed the product for 8 ms: that was a
        # process with several OpenBLAS threads on a busy machine, where either form costs that much.)
        den = norms * norms[s]
        cos[:, k] = np.divide(dots[k], den, out=np.zeros(batch.n), where=den > 0)
        cos[s, k] = -np.inf  # a seed is not its own hop
    at = np.argmax(cos, axis=1)
    best = cos[np.arange(batch.n), at]
    values = np.where(np.isfinite(best), best, 0.0).clip(0.0, 1.0)
    return RawSignal(values, Lazy(batch.n, lambda i: _reason(batch, top, at, values, i)))


def _reason(batch: Batch, top: np.ndarray, at: np.ndarray, values: np.ndarray, i: int) -> tuple[str, ...]:
    if values[i] <= 0.0:
        return (f"not like any of the query's {top.size} best matches",)
    return (f"cosine {values[i]:.3f} with {batch.ids[int(top[at[i]])]!r}, one of the query's {top.size} best matches",)
