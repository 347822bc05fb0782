"""Out of fold as served: every question ranked by `memrank eval` under the weights fitted without its conversation.

    python eval/served_folds.py --log DIR/decisions.jsonl --config examples/new-team.yaml --base new-team \
        --data DEV.jsonl --embeddings DEV.npz [--model linear] [--folds 2] [--workdir DIR]

`memrank tune --log` measures its out-of-fold numbers on the logged signals by
the linear score alone (no diversity pass). This check serves them: it fits
each fold's weights as the tuner does (``crossval.cross_validate``, seed 0),
writes them as profiles ``fold-1`` .. ``fold-K`` (based on ``--base``) next to
``--config``'s, runs ``memrank eval --data`` with ``--base`` and those
profiles (the whole pipeline: threshold, diversity pass, selection), and
scores each question under the fold that held its conversation out, paired
with ``--base`` on the same question (bootstrap as `memrank eval`'s).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import yaml

from memrank.config import load_settings
from memrank.evaluation.bootstrap import paired
from memrank.tuning.ascent import Settings
from memrank.tuning.crossval import MODELS, cross_validate, group_folds
from memrank.tuning.logs import load_logs
from memrank.tuning.metrics import Metric
from memrank.tuning.output import config_of
from memrank.tuning.queries import base_profile


def main() -> int:
    """Fit the folds, serve them through `memrank eval`, print base vs out-of-fold as served."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log", type=Path, action="append", required=True)
    ap.add_argument("--config", type=Path)
    ap.add_argument("--base", default="default")
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--embeddings", type=Path)
    ap.add_argument("--model", choices=MODELS, default="linear")
    ap.add_argument("--folds", type=int, default=2)
    ap.add_argument("--metric", default="recall@5")
    ap.add_argument("--workdir", type=Path, default=Path("served-folds"))
    args = ap.parse_args()
    settings = load_settings(str(args.config) if args.config is not None else None, env={})
    base = base_profile(settings.profiles, args.base)
    dataset, _ = load_logs(args.log, base)
    weights = np.array([s.weight for s in base.signals], dtype=np.float64)
    cv = cross_validate(dataset, Metric.parse(args.metric), weights, args.folds, Settings(seed=0), model=args.model)
    groups = [q.group for q in dataset.queries]
    fold_of = {groups[i]: f + 1 for f, test in enumerate(group_folds(groups, len(cv.folds), 0)) for i in test}
    doc = (yaml.safe_load(args.config.read_text(encoding="utf-8")) or {}) if args.config is not None else {}
    profiles = dict(doc.get("profiles") or {})
    for f, fold in enumerate(cv.folds, 1):
        profiles |= config_of(f"fold-{f}", base, fold.weights, f"{args.model} fit without fold {f}")["profiles"]
    args.workdir.mkdir(parents=True, exist_ok=True)
    config = args.workdir / "folds.yaml"
    config.write_text(yaml.safe_dump({"profiles": profiles}, sort_keys=False), encoding="utf-8")
    per_question = args.workdir / "per_question.jsonl"
    rows = ",".join([base.name, *(f"fold-{f}" for f in range(1, len(cv.folds) + 1))])
    embeddings = ["--embeddings", str(args.embeddings)] if args.embeddings is not None else []
    status = subprocess.call([sys.executable, "-m", "memrank.cli", "eval", "--data", str(args.data), *embeddings,
                              "--config", str(config), "--profiles", rows, "--baselines", "", "--reference",
                              base.name, "--out", str(args.workdir / "report.json"), "--per-question",
                              str(per_question), "--no-progress"], stdout=subprocess.DEVNULL)
    if status:
        return status
    metric = args.metric
    scores: dict[tuple[str, str], float] = {}
    for line in per_question.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        scores[(r["row"], r["key"])] = r[metric]
    keys = [q.key for q in dataset.queries]
    served_base = [scores[(base.name, k)] for k in keys]
    served_tuned = [scores[(f"fold-{fold_of[q.group]}", q.key)] for q in dataset.queries]
    p = paired(served_tuned, served_base)
    print(f"served out of fold ({len(keys)} questions, {len(cv.folds)} folds by group, model {args.model}): "
          f"{metric} {base.name} {np.mean(served_base):.4f}, tuned {np.mean(served_tuned):.4f} "
          f"({p.delta:+.4f}, paired bootstrap 95% [{p.low:+.4f}, {p.high:+.4f}])")
    return 0


if __name__ == "__main__":
    sys.exit(main())
