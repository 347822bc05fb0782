"""Coordinate ascent on a ranking metric, as RankLib's CoordinateAscent does, over a grid. Pure numpy.

The model is linear, ``score = sum_s w_s x normalised_s``, and a ranking does
not change when every weight is multiplied by the same positive number, so one
weight (the *anchor*) is held at 1 and the others are searched relative to it:

1. from a start vector, take each other weight in turn (in the given order,
   or a fresh seeded permutation every round) and try every grid value; keep
   a change only when the metric gains more than ``TOLERANCE``;
2. stop after ``rounds`` sweeps, or earlier when a sweep changes nothing;
3. with several starts, the best metric wins (ties: the earlier start);
4. ``prune`` then zeroes every weight whose removal costs nothing on the
   metric (a signal that is constant in the data keeps no weight it only
   inherited from the start).

``to_simplex`` then scales the weights to sum to 1 at three decimals (more
when rounding to three would cost the fit a tie it relied on), the rounding
remainder given to the anchor, so a profile's combined score stays in
[0, 1] and every score is still a sum of ``weight x normalised`` contributions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

# eval/cv.py's grid (relative to the anchor); memrank tune adds larger steps for data the anchor matters less in.
GRID = (0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0, 1.5)
WIDE_GRID = (*GRID, 2.0, 3.0, 5.0)
TOLERANCE = 1e-12
DECIMALS = 3
MAX_DECIMALS = 9

Objective = Callable[[np.ndarray], float]


@dataclass(frozen=True)
class Fit:
    """Weights (anchor at 1) and the metric they reach."""

    weights: np.ndarray
    value: float


def coordinate_ascent(objective: Objective, start: np.ndarray, anchor: int, grid: Sequence[float] = GRID,
                      rounds: int = 3, rng: np.random.Generator | None = None) -> Fit:
    """Grid coordinate ascent from ``start``; ``rng`` None = coordinates in index order every round."""
    w = np.asarray(start, dtype=np.float64).copy()
    best = objective(w)
    coords = [j for j in range(w.shape[0]) if j != anchor]
    for _ in range(rounds):
        changed = False
        for j in coords if rng is None else rng.permutation(coords).tolist():
            for g in grid:
                if g == w[j]:  # the current value: no gain possible
                    continue
                trial = w.copy()
                trial[j] = g
                v = objective(trial)
                if v > best + TOLERANCE:
                    best, w, changed = v, trial, True
        if not changed:
            break
    return Fit(w, best)


def random_starts(start: np.ndarray, anchor: int, grid: Sequence[float], count: int,
                  rng: np.random.Generator) -> list[np.ndarray]:
    """``count`` starts with every weight but the anchor's drawn from the grid."""
    out = []
    for _ in range(count):
        w = rng.choice(np.asarray(grid, dtype=np.float64), size=start.shape[0])
        w[anchor] = 1.0
        out.append(w)
    return out


def best_of(objective: Objective, starts: Sequence[np.ndarray], anchor: int, grid: Sequence[float], rounds: int,
            rng: np.random.Generator | None, tick: Callable[[], object] | None = None) -> Fit:
    """Coordinate ascent from every start (``tick`` after each); the best metric wins, ties to the earlier start."""
    fits = []
    for s in starts:
        fits.append(coordinate_ascent(objective, s, anchor, grid, rounds, rng))
        if tick is not None:
            tick()
    return max(fits, key=lambda f: f.value)  # max keeps the first of equals


def prune(objective: Objective, fit: Fit, anchor: int) -> Fit:
    """Zero each weight (smallest first) whose removal costs nothing on the metric."""
    w, best = fit.weights.copy(), fit.value
    for j in sorted((j for j in range(w.shape[0]) if j != anchor and w[j] > 0), key=lambda j: (w[j], j)):
        trial = w.copy()
        trial[j] = 0.0
        v = objective(trial)
        if v >= best - TOLERANCE:
            w, best = trial, v
    return Fit(w, best)


def to_simplex(weights: np.ndarray, anchor: int, decimals: int = DECIMALS) -> np.ndarray:
    """Weights scaled to sum to 1, rounded, the rounding remainder given to the anchor."""
    raw = weights.tolist()
    total = sum(raw)
    out = [round(v / total, decimals) if v > 0 else 0.0 for v in raw]
    out[anchor] = round(out[anchor] + 1.0 - sum(out), decimals)
    return np.array(out, dtype=np.float64)


@dataclass(frozen=True)
class Settings:
    """How ``fit_weights`` searches: grid, sweeps, random starts beyond the base, and the seed."""

    grid: tuple[float, ...] = WIDE_GRID
    rounds: int = 5
    restarts: int = 3
    seed: int = 0


DEFAULT_SETTINGS = Settings()


def fit_weights(objective: Objective, base: np.ndarray, settings: Settings = DEFAULT_SETTINGS,
                tick: Callable[[], object] | None = None) -> np.ndarray:
    """Weights fitted from the base's (anchor = its largest weight) and seeded random starts, pruned, on the simplex."""
    anchor = int(np.argmax(base))
    rng = np.random.default_rng(settings.seed)
    start = np.asarray(base, dtype=np.float64) / float(base[anchor])
    starts = [start, *random_starts(start, anchor, settings.grid, settings.restarts, rng)]
    fit = prune(objective, best_of(objective, starts, anchor, settings.grid, settings.rounds, rng, tick), anchor)
    # Rounding to three decimals can break a tie the fit relied on: keep more decimals until it costs nothing.
    for decimals in range(DECIMALS, MAX_DECIMALS):
        weights = to_simplex(fit.weights, anchor, decimals)
        if objective(weights) >= fit.value - TOLERANCE:
            return weights
    return to_simplex(fit.weights, anchor, MAX_DECIMALS)
