"""Constant signals: a signal that is the same for every eligible candidate carries no information.

A column whose normalised values are all equal over the eligible candidates
adds the same amount to every combined score: it cannot change their linear
order, but it does change the scale that later stages compare scores on. The
covering-set pass subtracts ``(1 - lambda) x similarity`` from
``lambda x score``, so weight spent on a column that is constant in this
request (``speaker`` when every candidate has the same speaker or none is
named, ``context`` when no candidate has a neighbour in the batch) shrinks the
score's spread and makes the similarity penalty relatively larger. Under a
profile with ``share_constant_weight``, such a column gets effective weight 0
and the other columns share its weight in proportion to theirs::

    total = sum(w_s), live = sum(w_s for informative s)
    effective_s = 0 if s is constant, else w_s x total / live

so the weights still add up to ``total`` (the combined score keeps its range)
and the linear order is unchanged. Nothing is shared when every weighted
column is constant, when none is, or with fewer than two eligible candidates.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def constant_columns(normalized: Sequence[np.ndarray] | np.ndarray, eligible: np.ndarray) -> list[bool]:
    """For each column (or matrix row), True when its values are equal over the eligible candidates (two or more)."""
    if int(np.count_nonzero(eligible)) < 2 or not len(normalized):
        return [False] * len(normalized)
    values = np.asarray(normalized)[:, eligible]  # a row per column (no copy of a matrix's rows)
    same: list[bool] = (values == values[:, :1]).all(axis=1).tolist()
    return same


def shared_weights(weights: Sequence[float], constant: Sequence[bool]) -> list[float]:
    """The effective weights: constant columns 0, their weight shared by the others pro rata."""
    total = sum(weights)
    live = sum(w for w, c in zip(weights, constant, strict=True) if not c)
    if live <= 0.0 or live == total:
        return list(weights)
    return [0.0 if c else clean_weight(w * total / live) for w, c in zip(weights, constant, strict=True)]


def clean_weight(weight: float) -> float:
    """The weight at 15 significant digits: 0.2 * 0.35 reads 0.07, not 0.06999999999999998 (contributions use
    this same value, so the combined identity stays exact)."""
    return float(f"{weight:.15g}")
