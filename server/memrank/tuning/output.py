"""What `memrank tune` prints (the fold table, the weights next to the base's) and writes (a config file).

The file is a config fragment ``memrank serve --config`` and ``memrank eval
--config`` read::

    profiles:
      NAME:
        base: BASE            # everything but the signals comes from the base profile
        description: ...
        signals: [{name, weight, normalization}, ...]   # the base's signals and normalisers, fitted weights
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from memrank.core.profile import Profile
from memrank.tuning.crossval import CrossValidation


def config_of(name: str, base: Profile, weights: np.ndarray, description: str) -> dict[str, Any]:
    """The ``profiles:`` mapping of the tuned profile."""
    signals = [{"name": s.name, "weight": float(w), "normalization": s.normalization}
               for s, w in zip(base.signals, weights.tolist(), strict=True)]
    return {"profiles": {name: {"base": base.name, "description": description, "signals": signals}}}


def write_config(path: Path, doc: dict[str, Any], header: Sequence[str]) -> None:
    """The config as YAML, after a comment header."""
    path.parent.mkdir(parents=True, exist_ok=True)
    comment = "".join(f"# {line}\n" for line in header)
    path.write_text(comment + yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")


def fold_table(cv: CrossValidation, metric: str) -> str:
    """Per fold: test groups, queries, and the metric of the base and the fitted weights on train and test."""
    lines = [f"| fold | test groups | train queries | test queries | base train {metric} | tuned train {metric} "
             f"| base test {metric} | tuned test {metric} |", "|---:" * 8 + "|"]
    for i, f in enumerate(cv.folds, 1):
        lines.append(f"| {i} | {f.test_groups} | {f.train_queries} | {f.test_queries} | {f.base_train:.4f} "
                     f"| {f.tuned_train:.4f} | {f.base_test:.4f} | {f.tuned_test:.4f} |")
    lines.append(f"| out of fold | | | {sum(f.test_queries for f in cv.folds)} | | | {cv.base_out_of_fold:.4f} "
                 f"| {cv.tuned_out_of_fold:.4f} |")
    return "\n".join(lines)


def weights_table(base: Profile, weights: np.ndarray, name: str) -> str:
    """The final weights (profile ``name``) next to the base profile's, signal by signal."""
    lines = [f"| signal | normalization | {base.name} | {name} |", "|---|---|---:|---:|"]
    for s, w in zip(base.signals, weights.tolist(), strict=True):
        lines.append(f"| {s.name} | {s.normalization} | {s.weight:g} | {w:g} |")
    return "\n".join(lines)
