"""The promotion gate: the tuned weights against the serving profile's on held-out groups. Pure numpy.

The labelled queries are split by group (a conversation, a user: the ``group``
cross-validation keeps together) before anything is fitted: the groups are
sorted, shuffled by ``default_rng(seed)``, and the first
``max(1, round(fraction x groups))`` of them are held out. The weights are
fitted on the other groups only, then both weight vectors are measured on every
held-out query, and the gate's interval is the paired bootstrap of
``mean(tuned - serving)`` (``memrank.evaluation.bootstrap.paired``: 2,000
resamples of the held-out queries, its fixed seed). The tuned profile passes
when the interval's lower bound is above 0: on this traffic it is better, not
merely not worse by chance.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memrank.evaluation.bootstrap import RESAMPLES, SEED, paired
from memrank.tuning.dataset import Dataset, Stack, TuningError
from memrank.tuning.metrics import Metric, Objective

DEFAULT_HOLDOUT = 0.3
EXIT_NOT_BETTER = 3  # `memrank tune --require-better`: the gate did not pass, nothing written


def held_out_groups(groups: list[str], fraction: float, seed: int) -> set[str]:
    """The groups held out: ``max(1, round(fraction x groups))`` of the sorted names, shuffled by the seed."""
    if not 0.0 < fraction < 1.0:
        raise TuningError(f"--holdout {fraction}: expected a fraction in (0, 1), e.g. {DEFAULT_HOLDOUT}")
    names = sorted(set(groups))
    if len(names) < 2:
        raise TuningError(f"--holdout: {len(names)} query group(s); holding out whole groups needs at least 2 "
                          f"(a group is the request id up to its last '/', or the labels' \"group\")")
    count = min(len(names) - 1, max(1, round(fraction * len(names))))
    order = np.random.default_rng(seed).permutation(len(names)).tolist()
    return {names[i] for i in order[:count]}


def split(dataset: Dataset, fraction: float, seed: int) -> tuple[Dataset, Dataset]:
    """(train, held out): the dataset's queries by whole groups, in their original order."""
    held = held_out_groups([q.group for q in dataset.queries], fraction, seed)
    train = tuple(q for q in dataset.queries if q.group not in held)
    test = tuple(q for q in dataset.queries if q.group in held)
    return Dataset(dataset.base, dataset.signals, train, dataset.skipped), Dataset(dataset.base, dataset.signals, test)


@dataclass(frozen=True)
class Verdict:
    """The held-out comparison: both means, the paired difference and its interval, and the sizes."""

    metric: str
    serving_name: str
    tuned_name: str
    serving: float
    tuned: float
    delta: float
    low: float
    high: float
    queries: int
    groups: int

    @property
    def passed(self) -> bool:
        """True when the interval of tuned - serving lies above 0."""
        return self.low > 0.0

    def line(self) -> str:
        """One line: the numbers and whether the interval clears 0."""
        why = "interval above 0: passed" if self.passed else "interval not above 0"
        return (f"gate: tuned {self.metric} {_num(self.tuned)} vs serving {_num(self.serving)}, "
                f"{_num(self.delta, True)} [{_num(self.low, True)}, {_num(self.high, True)}] over {self.queries} "
                f"held-out queries from {self.groups} groups: {why}")


def _num(x: float, sign: bool = False) -> str:
    """Three decimals without the leading zero, as a metric is usually read: .712, +.007, -.004, 1.000."""
    text = f"{x:+.3f}" if sign else f"{x:.3f}"
    return text.replace("0.", ".", 1) if abs(x) < 1 else text


def judge(held: Dataset, metric: Metric, serving: np.ndarray, tuned: np.ndarray, serving_name: str,
          tuned_name: str) -> Verdict:
    """Both weight vectors on every held-out query; the paired bootstrap of tuned - serving."""
    if not held.queries:
        raise TuningError("--holdout: no held-out query to judge the tuned profile on")
    objective = Objective(Stack.of(held.queries, len(held.signals)), metric)
    a, b = objective.per_query(tuned), objective.per_query(serving)
    p = paired(a.tolist(), b.tolist())
    return Verdict(metric.name, serving_name, tuned_name, float(b.mean()), float(a.mean()), p.delta, p.low, p.high,
                   len(held.queries), len({q.group for q in held.queries}))


def report(verdict: Verdict, *, fraction: float, seed: int, train: Dataset, signals: tuple[str, ...],
           serving: np.ndarray, tuned: np.ndarray, required: bool, written: Path | None) -> dict[str, Any]:
    """The machine-readable gate report (`memrank tune --report`)."""
    return {
        "schema": "memrank.tune-gate.v1",
        "metric": verdict.metric,
        "serving_profile": verdict.serving_name,
        "tuned_profile": verdict.tuned_name,
        "split": {"holdout": fraction, "seed": seed, "train_queries": len(train.queries),
                  "train_groups": len({q.group for q in train.queries}), "held_out_queries": verdict.queries,
                  "held_out_groups": verdict.groups},
        "held_out": {"serving": verdict.serving, "tuned": verdict.tuned, "delta": verdict.delta,
                     "ci95": [verdict.low, verdict.high], "bootstrap": {"resamples": RESAMPLES, "seed": SEED}},
        "passed": verdict.passed,
        "required": required,
        "written": None if written is None else str(written),
        "weights": {"serving": dict(zip(signals, serving.tolist(), strict=True)),
                    "tuned": dict(zip(signals, tuned.tolist(), strict=True))},
    }


def write_report(path: Path, doc: dict[str, Any]) -> None:
    """The report as JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
