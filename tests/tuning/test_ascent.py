"""Coordinate ascent, pruning and the simplex; eval/cv.py's fit, pinned against the code it replaced."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType, SimpleNamespace

import numpy as np
import pytest

from memrank.tuning.ascent import GRID, Settings, coordinate_ascent, fit_weights, prune, to_simplex
from memrank.tuning.dataset import Query, Stack
from memrank.tuning.metrics import Metric, Objective

CV_SIGNALS = ("relevance", "lexical", "context", "speaker", "importance", "recency")


def _cv() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "eval" / "cv.py"
    spec = importlib.util.spec_from_file_location("eval_cv", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _old_linear_recall(items: Sequence[dict[str, object]], w: Mapping[str, float], k: int = 5) -> float:
    """eval/cv.py's linear_recall before the move (per question, gated candidates last)."""
    total = 0.0
    for it in items:
        feats: Mapping[str, np.ndarray] = it["features"]  # type: ignore[assignment]
        s = sum(w[name] * feats[name] for name in w if w[name])
        s = np.where(it["eligible"], s, -np.inf)  # type: ignore[call-overload]
        top = np.argsort(-s, kind="stable")[:k]
        total += float(it["hits"][top].sum()) / len(it["evidence"])  # type: ignore[index, arg-type]
    return total / max(1, len(items))


def _old_fit_weights(items: Sequence[dict[str, object]]) -> dict[str, float]:
    """eval/cv.py's fit_weights before the move, verbatim but for the signal list."""
    w = {s: (1.0 if s == "relevance" else 0.0) for s in CV_SIGNALS}
    best = _old_linear_recall(items, w)
    for _ in range(3):
        changed = False
        for s in CV_SIGNALS[1:]:
            for g in GRID:
                trial = {**w, s: g}
                v = _old_linear_recall(items, trial)
                if v > best + 1e-12:
                    best, w, changed = v, trial, True
        if not changed:
            break
    total = sum(w.values())
    out = {s: round(v / total, 3) for s, v in w.items() if v > 0}
    out["relevance"] = round(out["relevance"] + 1.0 - sum(out.values()), 3)
    return out


def _random_question(rng: np.random.Generator, true_w: np.ndarray) -> tuple[dict[str, object], Query]:
    n = int(rng.integers(8, 40))
    cols = rng.random((len(CV_SIGNALS), n)).round(2)  # rounded: ties happen
    cols[3] = (rng.random(n) < 0.2).astype(float)  # a 0/1 signal, like speaker
    order = np.argsort(-(true_w @ cols + 0.3 * rng.random(n)), kind="stable")
    hits = np.zeros(n, dtype=bool)
    hits[order[: int(rng.integers(1, 4))]] = True
    missed = int(rng.integers(0, 2))  # evidence outside the pool still counts in the denominator
    eligible = rng.random(n) > 0.05
    eligible[:6] = True
    old = {"features": dict(zip(CV_SIGNALS, cols, strict=True)), "eligible": eligible, "hits": hits,
           "evidence": tuple(range(int(hits.sum()) + missed))}
    q = Query("k", "g", cols, eligible, hits.astype(float), np.ones(n, dtype=np.int64), np.ones(missed))
    return old, q


def test_eval_cv_fits_what_it_fitted_before_the_move() -> None:
    cv = _cv()
    rng = np.random.default_rng(7)
    for trial in range(4):
        true_w = rng.random(len(CV_SIGNALS))
        pairs = [_random_question(rng, true_w) for _ in range(60)]
        # The old code let a gated candidate count when fewer than k were eligible; every question here has
        # at least 6 eligible ones, as every LoCoMo pool does, so the two must agree exactly.
        items = [SimpleNamespace(query=q) for _, q in pairs]
        assert cv.fit_weights(items) == _old_fit_weights([o for o, _ in pairs]), trial


def test_coordinate_ascent_finds_the_grid_optimum_of_a_separable_objective() -> None:
    target = np.array([1.0, 0.3, 0.8])

    def objective(w: np.ndarray) -> float:
        return -float(((w - target) ** 2).sum())

    fit = coordinate_ascent(objective, np.array([1.0, 0.0, 0.0]), anchor=0, grid=GRID, rounds=3)
    assert fit.weights.tolist() == [1.0, 0.3, 0.8]
    assert fit.value == pytest.approx(0.0)


def test_a_change_is_kept_only_when_it_gains() -> None:
    fit = coordinate_ascent(lambda w: 1.0, np.array([1.0, 0.4]), anchor=0)  # flat: nothing moves
    assert fit.weights.tolist() == [1.0, 0.4]


def test_prune_zeroes_weights_that_cost_nothing() -> None:
    def objective(w: np.ndarray) -> float:
        return float(w[1] > 0)  # only signal 1 matters

    fit = prune(objective, coordinate_ascent(objective, np.array([1.0, 0.5, 0.7]), 0), anchor=0)
    assert fit.weights.tolist() == [1.0, 0.5, 0.0] and fit.value == 1.0


def test_to_simplex_gives_the_rounding_remainder_to_the_anchor() -> None:
    # 1/3 each rounds to 0.333 three times (0.999): the anchor takes the 0.001 left.
    assert to_simplex(np.array([1.0, 1.0, 1.0]), anchor=1).tolist() == [0.333, 0.334, 0.333]
    assert to_simplex(np.array([0.0, 2.0, 6.0]), anchor=2).tolist() == [0.0, 0.25, 0.75]
    w = to_simplex(np.array([1.0, 0.35, 0.05, 0.8]), anchor=0)
    assert w.sum() == pytest.approx(1.0, abs=1e-12) and (w >= 0).all()


def _objective(seed: int) -> Objective:
    rng = np.random.default_rng(seed)
    queries = [_random_question(rng, np.array([0.2, 0.5, 0.1, 0.6, 0.0, 0.1]))[1] for _ in range(40)]
    return Objective(Stack.of(queries, len(CV_SIGNALS)), Metric.parse("ndcg@10"))


def test_fit_is_deterministic_under_a_seed_and_never_below_the_base() -> None:
    objective = _objective(11)
    base = np.array([0.257, 0.256, 0.256, 0.154, 0.051, 0.026])
    runs = [fit_weights(objective, base, Settings(seed=5)).tolist() for _ in range(2)]
    assert runs[0] == runs[1]
    assert objective(np.array(runs[0])) >= objective(base) - 1e-9
    assert sum(runs[0]) == pytest.approx(1.0, abs=1e-9)
