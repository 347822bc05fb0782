"""Normalisers: one array-in, array-out signature, ``(values, population) -> array``.

``population`` is a boolean mask of the candidates the statistics are taken
over (the ungated ones). Outside the population the result is 0, so a gated
candidate contributes nothing. Inside it the result is in [0, 1] for
``min_max``, ``z_score`` and ``rank``; ``none`` passes values through.
Empty in, empty out; a constant population maps to 0.5; never NaN.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

import numpy as np

from memrank.core.errors import ConfigError

Normalizer = Callable[[np.ndarray, np.ndarray], np.ndarray]

# Bound for the logistic squash: |z| never exceeds sqrt(n - 1) in practice,
# the clip only keeps np.exp away from overflow warnings.
_Z_CLIP = 40.0


_HUGE = 1e150


def _finite(values: np.ndarray) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    if np.count_nonzero(np.isfinite(v)) == v.size:  # the usual case: one pass, no copy (nothing here writes into it)
        return v
    return np.nan_to_num(v, nan=0.0, posinf=1e300, neginf=-1e300)


def _tame(values: np.ndarray) -> np.ndarray:
    v = _finite(values)
    # Statistics (max - min, squares) of values this large overflow; the
    # normalised result does not depend on the scale, so shrink them first.
    # Ordinary values are left untouched, bit for bit.
    peak = float(np.maximum.reduce(np.abs(v))) if v.size else 0.0
    return v / peak if peak > _HUGE else v


def none(values: np.ndarray, population: np.ndarray) -> np.ndarray:
    """Values unchanged inside the population, 0 outside."""
    return np.where(population, _finite(values), 0.0)


def min_max(values: np.ndarray, population: np.ndarray) -> np.ndarray:
    """(v - min) / (max - min) over the population; a constant population gives 0.5."""
    v = _tame(values)
    out = np.zeros(v.shape)
    if not np.count_nonzero(population):
        return out
    pop = v[population]
    lo, hi = float(np.minimum.reduce(pop)), float(np.maximum.reduce(pop))
    span = hi - lo
    if not span > 0.0 or not math.isfinite(span):
        out[population] = 0.5
        return out
    out[population] = ((pop - lo) / span).clip(0.0, 1.0)
    return out


def z_score(values: np.ndarray, population: np.ndarray) -> np.ndarray:
    """Logistic of the population z-score, 1 / (1 + exp(-z)); zero spread gives 0.5."""
    v = _tame(values)
    out = np.zeros(v.shape)
    if not np.count_nonzero(population):
        return out
    pop = v[population]
    std = float(pop.std())
    # Equal values have no spread, though the mean's rounding can leave std a few ulps above 0 (24 + 659.53 thrice).
    if pop.max() == pop.min() or not std > 0.0 or not math.isfinite(std):
        out[population] = 0.5
        return out
    z = ((pop - pop.mean()) / std).clip(-_Z_CLIP, _Z_CLIP)
    out[population] = 1.0 / (1.0 + np.exp(-z))
    return out


def percentile_rank(values: np.ndarray, population: np.ndarray) -> np.ndarray:
    """Average rank (ties share it) scaled to [0, 1], 1 = largest; a single candidate gives 0.5."""
    v = _tame(values)
    out = np.zeros_like(v)
    pop = v[population]
    m = pop.shape[0]
    if m == 0:
        return out
    if m == 1:
        out[population] = 0.5
        return out
    ordered = np.sort(pop)
    below = np.searchsorted(ordered, pop, side="left")
    upto = np.searchsorted(ordered, pop, side="right")
    # 0-based average rank of a tie group [below, upto) is (below + upto - 1) / 2.
    out[population] = (below + upto - 1) / 2.0 / (m - 1)
    return out


NORMALIZERS: Mapping[str, Normalizer] = MappingProxyType(
    {"none": none, "min_max": min_max, "z_score": z_score, "rank": percentile_rank}
)


def normalize(name: str, values: np.ndarray, population: np.ndarray) -> np.ndarray:
    """Apply the named normaliser; an unknown name raises ConfigError naming it."""
    try:
        fn = NORMALIZERS[name]
    except KeyError:
        raise ConfigError(f"unknown normalization {name!r} (known: {', '.join(NORMALIZERS)})") from None
    return fn(values, np.asarray(population, dtype=bool))


def normalize_columns(names: Sequence[str], columns: Sequence[np.ndarray], population: np.ndarray) -> np.ndarray:
    """Each column by its named normaliser (``normalize``), as the rows of one float64 matrix (one row per name)."""
    population = np.asarray(population, dtype=bool)
    out = np.zeros((len(names), population.shape[0]))
    for j, (name, column) in enumerate(zip(names, columns, strict=True)):
        out[j] = normalize(name, column, population)
    return out
