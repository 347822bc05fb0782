"""k-fold cross-validation by query group: fit on the other folds, measure on the held-out one. Pure numpy.

Groups (a conversation, a user, a tenant: whatever the caller's ``group``
says) never straddle folds, so a test fold's queries were never seen while
fitting. The groups are sorted, shuffled with ``default_rng(seed)`` and cut
into ``folds`` near-equal runs. Each fold reports the metric of the base
weights and of the fitted ones on its training and its test queries; the
out-of-fold metric is the mean over every query of its held-out value. The
weights written out are fitted on every query.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from memrank.tuning.ascent import DEFAULT_SETTINGS, Settings, fit_weights, to_simplex
from memrank.tuning.dataset import Dataset, Query, Stack, TuningError
from memrank.tuning.listwise import fit_linear
from memrank.tuning.metrics import Metric, Objective

MODELS = ("ascent", "linear")

QUERIES_PER_FOLD = 2  # at least this many queries with a relevant candidate per fold


@dataclass(frozen=True)
class FoldResult:
    """One fold: sizes, and the metric of the base and the fitted weights on train and test."""

    test_groups: int
    train_queries: int
    test_queries: int
    base_train: float
    tuned_train: float
    base_test: float
    tuned_test: float
    weights: np.ndarray


@dataclass(frozen=True)
class CrossValidation:
    """Every fold, the pooled out-of-fold metric, and the final weights (fitted on every query)."""

    folds: tuple[FoldResult, ...]
    base_out_of_fold: float
    tuned_out_of_fold: float
    weights: np.ndarray
    base_all: float
    tuned_all: float
    base_held: np.ndarray | None = None  # per query (in fold order), the base's held-out metric
    tuned_held: np.ndarray | None = None  # per query, the fitted weights' held-out metric (paired with base_held)


def effective_folds(dataset: Dataset, folds: int) -> int:
    """``folds`` capped at the number of groups; TuningError when there is too little to cross-validate."""
    if folds < 2:
        raise TuningError(f"--folds {folds}: at least 2 folds are needed to cross-validate")
    groups = len({q.group for q in dataset.queries})
    if groups < 2:
        raise TuningError(f"{groups} query group(s): cross-validation needs at least 2 (give each line its own "
                          f"\"group\", or leave \"group\" out so every query is its own)")
    k = min(folds, groups)
    useful = sum(1 for q in dataset.queries if q.reachable)
    if useful < QUERIES_PER_FOLD * k:
        raise TuningError(f"{useful} labelled queries with a relevant candidate; at least {QUERIES_PER_FOLD * k} "
                          f"({QUERIES_PER_FOLD} x {k} folds) are needed to fit and cross-validate")
    return k


def group_folds(groups: Sequence[str], folds: int, seed: int) -> list[np.ndarray]:
    """Per fold, the indices of its test queries (whole groups, seeded)."""
    names = sorted(set(groups))
    runs = np.array_split(np.random.default_rng(seed).permutation(len(names)), folds)
    fold_of = {names[int(g)]: f for f, run in enumerate(runs) for g in run}
    of = np.array([fold_of[g] for g in groups])
    return [np.flatnonzero(of == f) for f in range(folds)]


def _objective(dataset: Dataset, queries: Sequence[Query], metric: Metric) -> Objective:
    return Objective(Stack.of(queries, len(dataset.signals)), metric)


def fit(model: str, objective: Objective, base: np.ndarray, settings: Settings,
        tick: Callable[[], object] | None = None) -> np.ndarray:
    """Weights on the simplex: ``ascent`` searches ``objective``'s metric; ``linear`` fits the listwise loss
    (``tuning.listwise``) on the objective's queries, whatever the metric (it is still what is reported)."""
    if model == "linear":
        w = fit_linear(objective.stack, tick=None)
        if tick is not None:
            tick()
        if not (w > 0).any():
            return np.asarray(base, dtype=np.float64) / float(np.sum(base))
        return to_simplex(w, int(np.argmax(w)))
    return fit_weights(objective, base, settings, tick)


def cross_validate(dataset: Dataset, metric: Metric, base: np.ndarray, folds: int,
                   settings: Settings = DEFAULT_SETTINGS,
                   tick: Callable[[], object] | None = None, model: str = "ascent") -> CrossValidation:
    """Fit on every fold's training queries and measure on its test ones; then fit on everything."""
    k = effective_folds(dataset, folds)
    queries = dataset.queries
    results = []
    held_base, held_tuned = [], []
    for test in group_folds([q.group for q in queries], k, settings.seed):
        in_test = set(test.tolist())
        train_q = [q for i, q in enumerate(queries) if i not in in_test]
        test_q = [queries[i] for i in test.tolist()]
        train, held = _objective(dataset, train_q, metric), _objective(dataset, test_q, metric)
        w = fit(model, train, base, settings, tick)
        results.append(FoldResult(len({q.group for q in test_q}), len(train_q), len(test_q), train(base), train(w),
                                  held(base), held(w), w))
        held_base.append(held.per_query(base))
        held_tuned.append(held.per_query(w))
    everything = _objective(dataset, queries, metric)
    weights = fit(model, everything, base, settings, tick)
    base_held, tuned_held = np.concatenate(held_base), np.concatenate(held_tuned)
    return CrossValidation(tuple(results), float(base_held.mean()), float(tuned_held.mean()), weights,
                           everything(base), everything(weights), base_held, tuned_held)
