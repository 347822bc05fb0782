"""Out-of-fold check of `default` on both shapes: LoCoMo turns and LongMemEval_S sessions.

    python eval/cv_shapes.py --locomo DEV.jsonl --locomo-embeddings DEV.npz \\
                             --lme LME.jsonl.gz --lme-embeddings LME.npz [--out CV.json] [--every K]

``eval/cv.py`` chooses `default`'s weights and diversity lambda on LoCoMo
alone. One profile must serve both shapes, so this script runs that same
procedure inside two folds that hold out part of *both* datasets, and adds
the choices that are new, on the two training parts together:
``share_constant_weight`` (a signal constant over a request's eligible
candidates gives its weight to the others) and ``diversity_floor`` (the
covering set penalises only similarity above it, rescaled to [0, 1]):

1. folds: LoCoMo by conversation as ``eval/cv.py`` (first half of the
   conversations / the rest), LongMemEval by question (SHA-256 of the
   question id, as an integer, even / odd);
2. on a fold's training part: weights and lambda by ``eval/cv.py``
   (``cv.choose``, LoCoMo training conversations); then the switch, on or
   off, by the mean of the two datasets' training recall@5 (each dataset
   weighs one half; a tie goes to on: the switch cannot change the linear
   order, only the covering set's trade-off) = ``default``, today's
   procedure; then the floor from ``FLOORS`` by the same mean (a tie goes to
   the earlier entry: no floor first, then the floors that change least)
   = ``floor``;
3. both are scored with the full core pipeline on the held-out parts of both
   datasets; swapping the folds gives every question one held-out score.

Reported per dataset: the out-of-fold rows of ``default``, ``floor`` and
LlamaIndex's relative-score fusion, with paired-bootstrap intervals floor -
llamaindex, floor - default and default - llamaindex, recall@5 and nDCG@10 by
category / question type with floor - default per category, and the choice
on all the dev data (what ships). About 12 minutes on 2 cores
(``--every K`` keeps every K-th question of each dataset, for a quick look).
Deterministic.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cv  # eval/cv.py: items, the weight fitter, the pipeline run

from memrank.core.profile import Profile
from memrank.evaluation import report
from memrank.evaluation.bootstrap import paired

SHARE = (True, False)  # in order of preference on a tie
FLOORS = (0.0, 0.5, 0.6, 0.7, 0.8)  # diversity_floor, in order of preference on a tie (0: none)
ROWS = ("default", "floor", "llamaindex")
METRICS = report.COMPARED


def lme_fold(key: str) -> int:
    """0 or 1: the parity of the SHA-256 of the question id (the conversation part of the key)."""
    return int(hashlib.sha256(key.split("/")[0].encode()).hexdigest(), 16) % 2


def profile(weights: dict[str, float], lam: float, share: bool, floor: float = 0.0) -> Profile:
    """eval/cv.py's candidate profile with sharing on or off and a similarity floor."""
    return replace(cv.profile_of(weights, lam), share_constant_weight=share, diversity_floor=floor)


def recall5(items: Sequence[cv.Item], p: Profile) -> float:
    """Mean recall@5 of the full pipeline."""
    return float(np.mean([s.metric("recall@5") for s in cv.run_pipeline(items, p)])) if items else 0.0


def choose_share(locomo: Sequence[cv.Item], lme: Sequence[cv.Item], weights: dict[str, float], lam: float,
                 ) -> tuple[bool, dict[str, float]]:
    """The switch with the best mean training recall@5 of the two datasets (ties: on); every option's score."""
    tried = {str(share): round(0.5 * recall5(locomo, profile(weights, lam, share))
                               + 0.5 * recall5(lme, profile(weights, lam, share)), 4) for share in SHARE}
    best = max(SHARE, key=lambda x: (tried[str(x)], -SHARE.index(x)))
    return best, tried


def choose_floor(locomo: Sequence[cv.Item], lme: Sequence[cv.Item], weights: dict[str, float], lam: float,
                 share: bool, none: float) -> tuple[float, dict[str, float]]:
    """The floor with the best mean training recall@5 of the two datasets (ties: the earlier in ``FLOORS``).

    ``none`` is the score without a floor (``choose_share``'s, not run again)."""
    tried = {str(FLOORS[0]): none}
    for floor in FLOORS[1:]:
        p = profile(weights, lam, share, floor)
        tried[str(floor)] = round(0.5 * recall5(locomo, p) + 0.5 * recall5(lme, p), 4)
    best = max(FLOORS, key=lambda x: (tried[str(x)], -FLOORS.index(x)))
    return best, tried


def _by_category(items: Sequence[cv.Item], types: dict[str, str], a: list[report.Scored],
                 b: list[report.Scored]) -> dict[str, Any]:
    """Paired bootstrap a - b per category / question type (recall@5, nDCG@10)."""
    groups: dict[str, list[int]] = {}
    for k, it in enumerate(items):
        groups.setdefault(types.get(it.key, str(it.category)), []).append(k)
    return {g: {m: paired([a[k].metric(m) for k in ks], [b[k].metric(m) for k in ks]).as_dict()
                for m in ("recall@5", "ndcg@10")} for g, ks in sorted(groups.items())}


def _rows(name: str, scored: list[report.Scored]) -> dict[str, Any]:
    return report.row(name, scored)


def _versus(a: list[report.Scored], b: list[report.Scored]) -> dict[str, Any]:
    return report.versus(a, b)


def _by_type(items: Sequence[cv.Item], types: dict[str, str], scored: list[report.Scored]) -> dict[str, Any]:
    out: dict[str, list[report.Scored]] = {}
    for it, s in zip(items, scored, strict=True):
        out.setdefault(types.get(it.key, str(it.category)), []).append(s)
    return {k: {"questions": len(v), **{m: round(float(np.mean([s.metric(m) for s in v])), 4)
                                        for m in ("recall@5", "ndcg@10")}} for k, v in sorted(out.items())}


def question_types(path: Path) -> dict[str, str]:
    """LongMemEval's question_type per question key (empty for data without one)."""
    from memrank.evaluation.data import read_json_lines

    out = {}
    for raw in read_json_lines(path):
        for i, q in enumerate(raw["questions"]):
            if "question_type" in q:
                out[f"{raw['conversation_id']}/q{i}"] = str(q["question_type"])
    return out


def main() -> int:
    """Entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--locomo", required=True, type=Path)
    ap.add_argument("--locomo-embeddings", required=True, type=Path)
    ap.add_argument("--lme", required=True, type=Path)
    ap.add_argument("--lme-embeddings", required=True, type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--every", type=int, default=1, help="keep every K-th question of each dataset (a quick look)")
    args = ap.parse_args()
    t = time.monotonic()
    loc, lme = cv.prepare(args.locomo, args.locomo_embeddings), cv.prepare(args.lme, args.lme_embeddings)
    loc, lme = loc[::args.every], lme[::args.every]
    types = question_types(args.lme)
    convs = sorted({it.conversation for it in loc}, key=lambda c: [int(x) if x.isdigit() else x
                                                                     for x in c.replace("-", " ").split()])
    half = len(convs) // 2
    held_loc = [set(convs[half:]), set(convs[:half])]
    print(f"prepared {len(loc)} LoCoMo and {len(lme)} LongMemEval questions in {time.monotonic() - t:.0f} s",
          file=sys.stderr)
    result: dict[str, Any] = {"lambdas": list(cv.LAMBDAS), "share": list(SHARE), "floors": list(FLOORS),
                              "every": args.every, "folds": []}
    oof: dict[str, dict[str, list[report.Scored]]] = {d: {r: [] for r in ROWS} for d in ("locomo", "lme")}
    for k in (0, 1):
        loc_train = [it for it in loc if it.conversation not in held_loc[k]]
        loc_test = [it for it in loc if it.conversation in held_loc[k]]
        lme_train = [it for it in lme if lme_fold(it.key) != k]
        lme_test = [it for it in lme if lme_fold(it.key) == k]
        weights, lam, tried_lambda = cv.choose(loc_train)
        share, tried_share = choose_share(loc_train, lme_train, weights, lam)
        floor, tried_floor = choose_floor(loc_train, lme_train, weights, lam, share, tried_share[str(share)])
        rows = {"default": profile(weights, lam, share), "floor": profile(weights, lam, share, floor)}
        fold: dict[str, Any] = {"locomo_held_out": sorted(held_loc[k]), "lme_held_out_parity": k,
                                "weights": weights, "diversity_lambda": lam,
                                "locomo_train_recall@5_by_lambda": tried_lambda,
                                "share_constant_weight": share, "mean_train_recall@5_by_share": tried_share,
                                "diversity_floor": floor, "mean_train_recall@5_by_floor": tried_floor}
        for name, test in (("locomo", loc_test), ("lme", lme_test)):
            for r, p in rows.items():
                oof[name][r] += cv.run_pipeline(test, p)
            oof[name]["llamaindex"] += cv.reference(test)
        result["folds"].append(fold)
        print(f"fold {k}: weights {weights}; lambda {lam}; share {share} {tried_share}; floor {floor} {tried_floor}",
              file=sys.stderr)
    result["out_of_fold"] = {}
    for name, items in (("locomo", loc), ("lme", lme)):
        order = {it.key: i for i, it in enumerate(items)}
        rows_ = {r: sorted(v, key=lambda s: order[s.key]) for r, v in oof[name].items()}
        ordered = sorted(items, key=lambda it: order[it.key])
        result["out_of_fold"][name] = {
            "rows": {r: _rows(r, v) for r, v in rows_.items()},
            "floor_vs_llamaindex": _versus(rows_["floor"], rows_["llamaindex"]),
            "floor_vs_default": _versus(rows_["floor"], rows_["default"]),
            "default_vs_llamaindex": _versus(rows_["default"], rows_["llamaindex"]),
            "by_type": {r: _by_type(ordered, types, v) for r, v in rows_.items()},
            "floor_vs_default_by_type": _by_category(ordered, types, rows_["floor"], rows_["default"]),
        }
        _print(name, result["out_of_fold"][name])
    weights, lam, _ = cv.choose(loc)
    share, tried = choose_share(loc, lme, weights, lam)
    floor, tried_floor = choose_floor(loc, lme, weights, lam, share, tried[str(share)])
    result["shipped"] = {"weights": weights, "diversity_lambda": lam, "share_constant_weight": share,
                         "mean_recall@5_by_share": tried, "diversity_floor": floor,
                         "mean_recall@5_by_floor": tried_floor}
    print(json.dumps(result["shipped"], indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"{time.monotonic() - t:.0f} s", file=sys.stderr)
    return 0


def _print(name: str, doc: dict[str, Any], out: Callable[..., None] = print) -> None:
    n = sum(v["questions"] for v in doc["by_type"]["floor"].values())
    out(f"## {name}, out of fold ({n} questions)")
    for r, row in doc["rows"].items():
        out(f"{r:<11} " + " ".join(f"{m} {row[m]:.4f}" for m in METRICS))
    for cmp in ("floor_vs_llamaindex", "floor_vs_default", "default_vs_llamaindex"):
        out(f"{cmp}: " + "; ".join(f"{m} {v['delta']:+.4f} [{v['ci95'][0]:+.4f}, {v['ci95'][1]:+.4f}]"
                                    for m, v in doc[cmp].items()))
    for r, types in doc["by_type"].items():
        out(f"{r} by type: " + ", ".join(f"{t} {v['recall@5']:.3f}/{v['ndcg@10']:.3f} ({v['questions']})"
                                         for t, v in types.items()))
    for t, ms in doc["floor_vs_default_by_type"].items():
        out(f"floor - default, {t}: " + "; ".join(f"{m} {v['delta']:+.4f} [{v['ci95'][0]:+.4f}, {v['ci95'][1]:+.4f}]"
                                                  for m, v in ms.items()))


if __name__ == "__main__":
    sys.exit(main())
