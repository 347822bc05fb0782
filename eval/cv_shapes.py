"""Out-of-fold check of `default` on both shapes: LoCoMo turns and LongMemEval_S sessions.

    python eval/cv_shapes.py --locomo DEV.jsonl --locomo-embeddings DEV.npz \\
                             --lme LME.jsonl.gz --lme-embeddings LME.npz [--out CV.json]

One profile must serve both shapes, so this script chooses `default` inside
two folds that hold out part of *both* datasets, and compares two
procedures:

1. folds: LoCoMo by conversation as ``eval/cv.py`` (first half of the
   conversations / the rest), LongMemEval by question (SHA-256 of the
   question id, as an integer, even / odd);
2. ``before``, the procedure of the previous `default`: weights and lambda by
   ``eval/cv.py`` (``cv.choose``: coordinate ascent on LoCoMo training
   recall@5 over ``cv.SIGNALS``), ``share_constant_weight`` on;
3. ``after``, the procedure of today's `default` (``memrank tune --model
   linear``'s fit): weights over ``LEARNED`` (the signals of ``before`` less
   recency, plus ``thread``, ``length``, ``hop``, ``statement`` and ``date``) by the listwise
   softmax fit (``memrank.tuning.listwise``) on both training parts, each
   dataset weighing one half; then lambda among ``LAMBDAS`` by the mean of the
   two datasets' training recall@5 through the full pipeline (ties: the
   larger); ``share_constant_weight`` on;
4. both are scored with the full core pipeline on the held-out parts of both
   datasets; swapping the folds gives every question one held-out score.

Reported per dataset: the out-of-fold rows of ``before``, ``after`` and
LlamaIndex's relative-score fusion, with paired-bootstrap intervals after -
llamaindex, after - before and before - llamaindex, recall@5 by category /
question type, and the choice on all the dev data (what ships). About 10
minutes on 2 cores. Deterministic.
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
from memrank.tuning.ascent import to_simplex
from memrank.tuning.dataset import Stack
from memrank.tuning.listwise import balanced, fit_linear

LEARNED = ("relevance", "lexical", "context", "speaker", "importance", "thread", "length", "hop", "statement",
           "date")
LAMBDAS = (0.95, 0.9, 0.8)
METRICS = report.COMPARED


def lme_fold(key: str) -> int:
    """0 or 1: the parity of the SHA-256 of the question id (the conversation part of the key)."""
    return int(hashlib.sha256(key.split("/")[0].encode()).hexdigest(), 16) % 2


def profile(weights: dict[str, float], lam: float) -> Profile:
    """eval/cv.py's candidate profile (relevance min-max, the rest as they are), constant weight shared."""
    return replace(cv.profile_of(weights, lam), share_constant_weight=True)


def recall5(items: Sequence[cv.Item], p: Profile) -> float:
    """Mean recall@5 of the full pipeline."""
    return float(np.mean([s.metric("recall@5") for s in cv.run_pipeline(items, p)])) if items else 0.0


def fit_learned(locomo: Sequence[cv.Item], lme: Sequence[cv.Item]) -> dict[str, float]:
    """The listwise fit over ``LEARNED`` on both datasets (each one half), scaled to sum 1."""
    rows = [cv.COLUMNS.index(s) for s in LEARNED]
    queries = [replace(it.query, features=it.query.features[rows]) for it in (*locomo, *lme)]
    w = fit_linear(Stack.of(queries, len(rows)), balanced(["locomo"] * len(locomo) + ["lme"] * len(lme)))
    shares = to_simplex(w, int(np.argmax(w)))
    return {s: float(v) for s, v in zip(LEARNED, shares.tolist(), strict=True) if v > 0}


def choose_after(locomo: Sequence[cv.Item], lme: Sequence[cv.Item]) -> tuple[dict[str, float], float, dict[str, float]]:
    """Listwise weights, then the lambda with the best mean training recall@5 of the two datasets."""
    weights = fit_learned(locomo, lme)
    tried = {str(lam): round(0.5 * recall5(locomo, profile(weights, lam)) + 0.5 * recall5(lme, profile(weights, lam)),
                             4) for lam in LAMBDAS}
    return weights, max(LAMBDAS, key=lambda x: (tried[str(x)], x)), tried


def _rows(name: str, scored: list[report.Scored]) -> dict[str, Any]:
    return report.row(name, scored)


def _versus(a: list[report.Scored], b: list[report.Scored]) -> dict[str, Any]:
    return report.versus(a, b)


def _by_type(items: Sequence[cv.Item], types: dict[str, str], scored: list[report.Scored]) -> dict[str, Any]:
    out: dict[str, list[float]] = {}
    for it, s in zip(items, scored, strict=True):
        out.setdefault(types.get(it.key, str(it.category)), []).append(s.metric("recall@5"))
    return {k: {"questions": len(v), "recall@5": round(float(np.mean(v)), 4)} for k, v in sorted(out.items())}


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
    args = ap.parse_args()
    t = time.monotonic()
    loc, lme = cv.prepare(args.locomo, args.locomo_embeddings), cv.prepare(args.lme, args.lme_embeddings)
    types = question_types(args.lme)
    convs = sorted({it.conversation for it in loc}, key=lambda c: [int(x) if x.isdigit() else x
                                                                     for x in c.replace("-", " ").split()])
    half = len(convs) // 2
    held_loc = [set(convs[half:]), set(convs[:half])]
    print(f"prepared {len(loc)} LoCoMo and {len(lme)} LongMemEval questions in {time.monotonic() - t:.0f} s",
          file=sys.stderr)
    result: dict[str, Any] = {"learned": list(LEARNED), "lambdas": list(LAMBDAS), "folds": []}
    oof: dict[str, dict[str, list[report.Scored]]] = {d: {"before": [], "after": [], "llamaindex": []}
                                                      for d in ("locomo", "lme")}
    for k in (0, 1):
        loc_train = [it for it in loc if it.conversation not in held_loc[k]]
        loc_test = [it for it in loc if it.conversation in held_loc[k]]
        lme_train = [it for it in lme if lme_fold(it.key) != k]
        lme_test = [it for it in lme if lme_fold(it.key) == k]
        old_w, old_lam, _ = cv.choose(loc_train)
        weights, lam, tried = choose_after(loc_train, lme_train)
        before, after = profile(old_w, old_lam), profile(weights, lam)
        fold: dict[str, Any] = {"locomo_held_out": sorted(held_loc[k]), "lme_held_out_parity": k,
                                "before": {"weights": old_w, "diversity_lambda": old_lam},
                                "after": {"weights": weights, "diversity_lambda": lam,
                                          "mean_train_recall@5_by_lambda": tried}}
        for name, test in (("locomo", loc_test), ("lme", lme_test)):
            oof[name]["before"] += cv.run_pipeline(test, before)
            oof[name]["after"] += cv.run_pipeline(test, after)
            oof[name]["llamaindex"] += cv.reference(test)
        result["folds"].append(fold)
        print(f"fold {k}: before {old_w} lambda {old_lam}; after {weights} lambda {lam} {tried}", file=sys.stderr)
    result["out_of_fold"] = {}
    for name, items in (("locomo", loc), ("lme", lme)):
        order = {it.key: i for i, it in enumerate(items)}
        rows = {r: sorted(v, key=lambda s: order[s.key]) for r, v in oof[name].items()}
        ordered = sorted(items, key=lambda it: order[it.key])
        result["out_of_fold"][name] = {
            "rows": {r: _rows(r, v) for r, v in rows.items()},
            "after_vs_llamaindex": _versus(rows["after"], rows["llamaindex"]),
            "after_vs_before": _versus(rows["after"], rows["before"]),
            "before_vs_llamaindex": _versus(rows["before"], rows["llamaindex"]),
            "recall@5_by_type": {r: _by_type(ordered, types, v) for r, v in rows.items()},
        }
        _print(name, result["out_of_fold"][name])
    weights, lam, tried = choose_after(loc, lme)
    result["shipped"] = {"weights": weights, "diversity_lambda": lam, "mean_recall@5_by_lambda": tried}
    print(json.dumps(result["shipped"], indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"{time.monotonic() - t:.0f} s", file=sys.stderr)
    return 0


def _print(name: str, doc: dict[str, Any], out: Callable[..., None] = print) -> None:
    n = sum(v["questions"] for v in doc["recall@5_by_type"]["after"].values())
    out(f"## {name}, out of fold ({n} questions)")
    for r, row in doc["rows"].items():
        out(f"{r:<11} " + " ".join(f"{m} {row[m]:.4f}" for m in METRICS))
    for cmp in ("after_vs_llamaindex", "after_vs_before", "before_vs_llamaindex"):
        out(f"{cmp}: " + "; ".join(f"{m} {v['delta']:+.4f} [{v['ci95'][0]:+.4f}, {v['ci95'][1]:+.4f}]"
                                    for m, v in doc[cmp].items()))
    for r, types in doc["recall@5_by_type"].items():
        out(f"{r} recall@5 by type: " + ", ".join(f"{t} {v['recall@5']:.3f} ({v['questions']})"
                                                  for t, v in types.items()))


if __name__ == "__main__":
    sys.exit(main())
