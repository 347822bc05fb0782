"""The learning curve of `memrank tune --log`: out-of-fold gain against the number of labelled decisions.

    python eval/learning_curve.py --log DIR/decisions.jsonl [--config examples/new-team.yaml --base new-team]
        [--model linear [--model ascent]] [--folds 2] [--sizes 25,50,100,200,400] [--seeds 5] [--plot curve.png]

The test folds are the ones `memrank tune --log` uses (``crossval.group_folds``:
whole groups, i.e. conversations, seed 0) and stay fixed; only the training
labels shrink. For each size N and seed, each fold's weights are fitted on N
labelled decisions drawn at random (``default_rng(seed)``, without
replacement) from the other folds' decisions, and every decision is then
scored out of fold. A size at or above a fold's training set uses all of it
(one draw: nothing to sample). Per size the table gives the mean over seeds of
the out-of-fold gain over the base (the producing profile's weights), a 95%
paired bootstrap interval over the decisions of the seed-averaged gain, and
the smallest and largest gain of a single draw. The row with every training
decision is the tuner's own out-of-fold result (same folds, same fit, and the
bootstrap over the decisions in the same fold order, so the same interval).
Deterministic: same log, same table.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memrank.config import load_settings
from memrank.evaluation.bootstrap import paired
from memrank.tuning.ascent import Settings
from memrank.tuning.crossval import MODELS, effective_folds, fit, group_folds
from memrank.tuning.dataset import Dataset, Stack
from memrank.tuning.logs import load_logs
from memrank.tuning.metrics import Metric, Objective
from memrank.tuning.queries import base_profile


@dataclass(frozen=True)
class Point:
    """One training size: labels per fold, draws, the metric of base and tuned, the gain's interval and range."""

    size: int
    draws: int
    base: float
    tuned: float
    low: float  # the gain's 95% interval
    high: float
    worst: float  # the smallest and largest gain of one draw
    best: float

    @property
    def gain(self) -> float:
        """Mean out-of-fold gain of the tuned weights over the base's."""
        return self.tuned - self.base


def out_of_fold(dataset: Dataset, metric: Metric, base: np.ndarray, tests: list[np.ndarray], size: int | None,
                seed: int, model: str) -> np.ndarray:
    """Per decision (in dataset order), the held-out metric of weights fitted on ``size`` training decisions."""
    n = len(dataset.queries)
    held = np.zeros(n)
    for test in tests:
        train = np.setdiff1d(np.arange(n), test)
        if size is not None and size < train.shape[0]:
            train = np.sort(np.random.default_rng(seed).choice(train, size, replace=False))
        objective = Objective(Stack.of([dataset.queries[i] for i in train], len(dataset.signals)), metric)
        w = fit(model, objective, base, Settings(seed=seed))
        held_objective = Objective(Stack.of([dataset.queries[i] for i in test], len(dataset.signals)), metric)
        held[test] = held_objective.per_query(w)
    return held


def curve(dataset: Dataset, metric: Metric, base: np.ndarray, folds: int, sizes: list[int], seeds: int,
          model: str) -> list[Point]:
    """One Point per size (and one for every training decision), on fixed test folds."""
    k = effective_folds(dataset, folds)
    tests = group_folds([q.group for q in dataset.queries], k, 0)
    everything = Objective(Stack.of(list(dataset.queries), len(dataset.signals)), metric)
    base_held = everything.per_query(base)
    largest = max(len(dataset.queries) - t.shape[0] for t in tests)
    order = np.concatenate(tests)  # the tuner's order of the held-out values, for the same bootstrap
    points = []
    for size in [s for s in sizes if s < largest] + [largest]:
        draws = seeds if size < largest else 1
        runs = np.stack([out_of_fold(dataset, metric, base, tests, size, seed, model) for seed in range(draws)])
        p = paired(runs.mean(axis=0)[order].tolist(), base_held[order].tolist())
        gains = runs.mean(axis=1) - base_held.mean()
        points.append(Point(size, draws, float(base_held.mean()), float(runs.mean()), p.low, p.high,
                            float(gains.min()), float(gains.max())))
    return points


def table(points: list[Point], metric: str) -> str:
    """The curve as a Markdown table."""
    lines = [f"| labelled decisions per fold | draws | base {metric} | tuned {metric} | gain | 95% CI "
             f"| range over draws |", "|---:|---:|---:|---:|---:|---|---|"]
    for p in points:
        lines.append(f"| {p.size} | {p.draws} | {p.base:.4f} | {p.tuned:.4f} | {p.gain:+.4f} "
                     f"| [{p.low:+.4f}, {p.high:+.4f}] | {p.worst:+.4f} .. {p.best:+.4f} |")
    return "\n".join(lines)


def plot(curves: dict[str, list[Point]], metric: str, title: str, path: Path) -> None:
    """Gain against training size (log axis), per model, its interval shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.2), dpi=110)
    for model, points in curves.items():
        x = [p.size for p in points]
        ax.fill_between(x, [p.low for p in points], [p.high for p in points], alpha=0.2)
        ax.plot(x, [p.gain for p in points], marker="o", label=f"--model {model} (95% interval shaded)")
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.axhline(0.02, color="grey", linewidth=0.8, linestyle=":")
    ax.set_xscale("log")
    ax.set_xlabel("labelled decisions per training fold")
    ax.set_ylabel(f"out-of-fold {metric} gain")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)


def main() -> int:
    """Print the curve (and plot it)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log", type=Path, action="append", required=True)
    ap.add_argument("--config", type=Path, help="config file whose profiles --base may name")
    ap.add_argument("--base", default="default", help="the producing profile (default: default)")
    ap.add_argument("--model", choices=MODELS, action="append", help="repeatable (default: linear)")
    ap.add_argument("--folds", type=int, default=2)
    ap.add_argument("--metric", default="recall@5")
    ap.add_argument("--sizes", default="25,50,100,200,400")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--plot", type=Path)
    args = ap.parse_args()
    settings = load_settings(str(args.config) if args.config is not None else None, env={})
    base = base_profile(settings.profiles, args.base)
    dataset, _ = load_logs(args.log, base)
    metric = Metric.parse(args.metric)
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    weights = np.array([s.weight for s in base.signals], dtype=np.float64)
    groups = len({q.group for q in dataset.queries})
    curves = {}
    for model in args.model or ["linear"]:
        curves[model] = curve(dataset, metric, weights, args.folds, sizes, args.seeds, model)
        print(f"learning curve: {len(dataset.queries)} labelled decisions in {groups} groups, base {base.name}, "
              f"model {model}, {args.folds} folds by group (fixed), {args.seeds} draws per size")
        print(table(curves[model], metric.name))
    if args.plot is not None:
        plot(curves, metric.name, f"memrank tune --log: tuned from {base.name} on {len(dataset.queries)} labelled "
             f"decisions", args.plot)
        print(f"wrote {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
