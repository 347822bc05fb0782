"""Out-of-fold choice of the speaker design on three shapes: LoCoMo, LongMemEval_S and FriendsQA.

    python eval/cv_speaker.py --locomo DEV.jsonl --locomo-embeddings DEV.npz \\
        --lme LME.jsonl.gz --lme-embeddings LME.npz --friendsqa FQA.jsonl.gz --friendsqa-embeddings FQA.npz \\
        [--scenes SCENES_DIR] [--linear-only] [--out OUT.json]

Folds: LoCoMo and FriendsQA by conversation (episode), the first half of the
sorted ids / the rest; LongMemEval by question (``cv_shapes.lme_fold``). In
each fold, on the training parts only:

1. every design in ``DESIGNS`` (the columns standing in for ``speaker``) is
   fitted listwise over ``BASE`` + its columns on the three training parts
   (each dataset one third of the loss);
2. the design kept is the one with the highest mean training linear
   recall@5 of the three datasets among those no dataset of which is more
   than ``GUARD`` below the current design (``speaker``); ties to the
   earlier design in ``DESIGNS``;
3. lambda from ``cv_shapes.LAMBDAS`` by the mean training recall@5 of the
   three through the full pipeline (ties: the larger).

Reported, held out: the chosen design (``chosen``), the same procedure with
the current speaker signal (``refit``), today's procedure (``today``:
``cv_shapes.choose_after`` on LoCoMo and LongMemEval only), the shipped
`default` and LlamaIndex's relative-score fusion, with paired bootstraps;
with ``--scenes`` (``eval/friendsqa_scenes.py``'s output) also each held-out
episode's scenes under its fold's profiles. ``--linear-only`` prints every
design's held-out linear recall@5 and stops (the exploration).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cv
import cv_shapes
import speaker_designs

from memrank.evaluation import report
from memrank.profiles.builtin import BUILTIN_PROFILES
from memrank.tuning.ascent import to_simplex
from memrank.tuning.dataset import Stack
from memrank.tuning.listwise import balanced, fit_linear
from memrank.tuning.metrics import Metric, Objective

PROTOS = speaker_designs.register()
BASE = tuple(s for s in cv_shapes.LEARNED if s != "speaker")
DESIGNS: dict[str, tuple[str, ...]] = {
    "speaker": ("speaker",), "none": (), "speaker_inv": ("speaker_inv",), "about": ("about",),
    "speaker+mention": ("speaker", "mention"),
    **{f"few_{t}": (f"speaker_few_{t}",) for t in speaker_designs.THRESHOLDS},
    **{f"split_{t}": (f"speaker_few_{t}", f"speaker_many_{t}") for t in speaker_designs.THRESHOLDS},
}
GUARD = 0.002
DATASETS = ("locomo", "lme", "friendsqa")
Parts = dict[str, list[cv.Item]]


def fit(parts: Parts, design: str) -> dict[str, float]:
    """The listwise fit over BASE + the design's columns, each dataset one equal share, scaled to sum 1."""
    names = BASE + DESIGNS[design]
    rows = [cv.COLUMNS.index(s) for s in names]
    items = [it for d in DATASETS for it in parts[d]]
    queries = [replace(it.query, features=it.query.features[rows]) for it in items]
    w = fit_linear(Stack.of(queries, len(rows)), balanced([d for d in DATASETS for _ in parts[d]]))
    shares = to_simplex(w, int(np.argmax(w)))
    return {s: float(v) for s, v in zip(names, shares.tolist(), strict=True) if v > 0}


def linear_recall(items: Sequence[cv.Item], weights: dict[str, float]) -> float:
    """Mean recall@5 of the linear order sum(w x normalised) (no covering set)."""
    if not items:
        return 0.0
    rows = [cv.COLUMNS.index(s) for s in weights]
    queries = [replace(it.query, features=it.query.features[rows]) for it in items]
    return Objective(Stack.of(queries, len(rows)), Metric("recall", 5))(np.array(list(weights.values())))


def choose_design(parts: Parts) -> tuple[str, dict[str, dict[str, Any]]]:
    """Every design's fit and training linear recall; the design the rule keeps."""
    tried = {}
    for d in DESIGNS:
        w = fit(parts, d)
        tried[d] = {"weights": w, **{k: round(linear_recall(parts[k], w), 4) for k in DATASETS}}
    ref = tried["speaker"]
    ok = [d for d in DESIGNS if all(tried[d][k] >= ref[k] - GUARD for k in DATASETS)]
    best = max(ok, key=lambda d: (np.mean([tried[d][k] for k in DATASETS]), -list(DESIGNS).index(d)))
    return best, tried


def choose_lambda(parts: Parts, weights: dict[str, float]) -> tuple[float, dict[str, float]]:
    """The lambda with the best mean training recall@5 of the three datasets (full pipeline)."""
    tried = {str(lam): round(float(np.mean([cv_shapes.recall5(parts[k], cv_shapes.profile(weights, lam))
                                            for k in DATASETS])), 4) for lam in cv_shapes.LAMBDAS}
    return max(cv_shapes.LAMBDAS, key=lambda x: (tried[str(x)], x)), tried


def split(items: list[cv.Item], key: str = "conversation") -> list[set[str]]:
    """Held-out conversation ids of fold 0 and fold 1: the sorted ids' second half, then the first."""
    convs = sorted({getattr(it, key) for it in items})
    half = len(convs) // 2
    return [set(convs[half:]), set(convs[:half])]


def fold_parts(data: Parts, k: int, held: dict[str, list[set[str]]]) -> tuple[Parts, Parts]:
    """Training and held-out parts of fold k."""
    train: Parts = {}
    test: Parts = {}
    for d, items in data.items():
        if d == "lme":
            train[d] = [it for it in items if cv_shapes.lme_fold(it.key) != k]
            test[d] = [it for it in items if cv_shapes.lme_fold(it.key) == k]
        else:
            train[d] = [it for it in items if it.conversation not in held[d][k]]
            test[d] = [it for it in items if it.conversation in held[d][k]]
    return train, test


def episode(scene_item: cv.Item) -> str:
    """The episode of a scene-level item ("s01_e23_c01" -> "s01_e23")."""
    return "_".join(scene_item.conversation.split("_")[:2])


def main() -> int:
    """Entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for d in ("locomo", "lme", "friendsqa"):
        ap.add_argument(f"--{d}", required=True, type=Path)
        ap.add_argument(f"--{d}-embeddings", required=True, type=Path)
    ap.add_argument("--scenes", type=Path, help="eval/friendsqa_scenes.py's output folder")
    ap.add_argument("--linear-only", action="store_true")
    ap.add_argument("--fixed-lambda", type=float, help="keep this lambda instead of choosing one (saves CPU)")
    ap.add_argument("--choices", type=Path, help="a --linear-only run's --out: reuse its fits and choices")
    ap.add_argument("--all-data", action="store_true", help="only the rule on all the dev data (what ships)")
    ap.add_argument("--today", action="store_true", help="also run today's procedure (cv_shapes.choose_after)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    t = time.monotonic()
    cv.COLUMNS = cv.COLUMNS + PROTOS
    result: dict[str, Any] = {"designs": DESIGNS, "guard": GUARD, "folds": []}
    data: Parts = {d: cv.prepare(getattr(args, d), getattr(args, f"{d.replace('-', '_')}_embeddings"))
                   for d in DATASETS}
    if args.scenes:
        data["scenes"] = cv.prepare(args.scenes / "dev.jsonl.gz", args.scenes / "dev_minilm.npz")
    print(f"prepared {', '.join(f'{d} {len(v)}' for d, v in data.items())} in {time.monotonic() - t:.0f} s",
          file=sys.stderr)
    if args.all_data:
        best, tried = choose_design(data)
        result["shipped"] = {"chosen": best, "designs": tried}
        print(json.dumps(result["shipped"], indent=1), file=sys.stderr)
        if args.out:
            args.out.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
        return 0
    held = {d: split(data[d]) for d in ("locomo", "friendsqa")}
    held["scenes"] = held["friendsqa"]
    data_scenes = data.pop("scenes", [])
    rows: dict[str, dict[str, list[report.Scored]]] = {}
    for k in (0, 1):
        train, test = fold_parts(data, k, held)
        if data_scenes:
            test["scenes"] = [it for it in data_scenes if episode(it) in held["friendsqa"][k]]
        if args.choices:
            done = json.loads(args.choices.read_text(encoding="utf-8"))["folds"][k]
            best, tried = done["chosen"], done["designs"]
        else:
            best, tried = choose_design(train)
        fold: dict[str, Any] = {"held_out": {d: sorted(held[d][k]) for d in ("locomo", "friendsqa")},
                                "designs": tried, "chosen": best}
        for d, w in ((d, v["weights"]) for d, v in tried.items() if not args.choices):
            fold["designs"][d]["held_out_linear"] = {x: round(linear_recall(test[x], w), 4) for x in test}
        print(f"fold {k}: chosen {best}", file=sys.stderr)
        for d, v in tried.items():
            print(f"  {d:<16} train {[v[x] for x in DATASETS]} held {v.get('held_out_linear')}", file=sys.stderr)
        result["folds"].append(fold)
        if args.linear_only:
            continue
        profiles = {}
        for name, design in (("chosen", best), ("refit", "speaker")):
            w = tried[design]["weights"]
            lam, lams = (args.fixed_lambda, {}) if args.fixed_lambda else choose_lambda(train, w)
            fold[name] = {"design": design, "weights": w, "diversity_lambda": lam, "train_recall@5_by_lambda": lams}
            profiles[name] = cv_shapes.profile(w, lam)
        if args.today:
            tw, tlam, _ = cv_shapes.choose_after(train["locomo"], train["lme"])
            fold["today"] = {"weights": tw, "diversity_lambda": tlam}
            profiles["today"] = cv_shapes.profile(tw, tlam)
        profiles["shipped"] = BUILTIN_PROFILES["default"]
        for x, items in test.items():
            r = rows.setdefault(x, {})
            for name, p in profiles.items():
                same = name == "refit" and best == "speaker"  # the same profile as chosen: its rows again
                r.setdefault(name, []).extend(r["chosen"][-len(items):] if same else cv.run_pipeline(items, p))
            r.setdefault("llamaindex", []).extend(cv.reference(items))
        print(f"fold {k}: {json.dumps({n: fold.get(n) for n in ('chosen', 'refit', 'today')})}", file=sys.stderr)
    if not args.linear_only:
        types = {**cv_shapes.question_types(args.lme), **cv_shapes.question_types(args.friendsqa)}
        if args.scenes:
            types.update(cv_shapes.question_types(args.scenes / "dev.jsonl.gz"))
        result["out_of_fold"] = {x: summary(r, types) for x, r in rows.items()}
        for x, doc in result["out_of_fold"].items():
            print_summary(x, doc)
    if args.out:
        args.out.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"{time.monotonic() - t:.0f} s", file=sys.stderr)
    return 0


PAIRS = (("chosen", "shipped"), ("chosen", "refit"), ("chosen", "today"), ("chosen", "llamaindex"),
         ("refit", "llamaindex"), ("shipped", "llamaindex"), ("today", "llamaindex"))


def summary(rows: dict[str, list[report.Scored]], types: dict[str, str]) -> dict[str, Any]:
    """Rows, paired differences and recall@5 by category/type of one dataset's held-out questions."""
    keyed = {n: sorted(v, key=lambda s: s.key) for n, v in rows.items()}
    by_type: dict[str, dict[str, list[report.Scored]]] = {}
    for n, v in keyed.items():
        for s in v:
            by_type.setdefault(types.get(s.key, str(s.category)), {}).setdefault(n, []).append(s)
    return {"rows": {n: report.row(n, v) for n, v in keyed.items()},
            "by_type": {t: {"questions": len(r["chosen"]),
                            "recall@5": {n: round(float(np.mean([s.metric("recall@5") for s in v])), 4)
                                         for n, v in r.items()},
                            **{f"{a} - {b}": report.versus(r[a], r[b])["recall@5"] for a, b in PAIRS
                               if a in r and b in r}} for t, r in sorted(by_type.items())},
            "per_question": {n: [[s.key, s.metric("recall@5"), s.metric("ndcg@10")] for s in v]
                             for n, v in keyed.items()},
            "versus": {f"{a} - {b}": report.versus(keyed[a], keyed[b]) for a, b in PAIRS if a in keyed and b in keyed},
            "questions": len(keyed["chosen"])}


def print_summary(name: str, doc: dict[str, Any]) -> None:
    """The summary as text."""
    print(f"## {name}, out of fold ({doc['questions']} questions)")
    for r, row in doc["rows"].items():
        print(f"{r:<11} " + " ".join(f"{m} {row[m]:.4f}" for m in cv_shapes.METRICS))
    for cmp, v in doc["versus"].items():
        print(f"{cmp}: " + "; ".join(f"{m} {x['delta']:+.4f} [{x['ci95'][0]:+.4f}, {x['ci95'][1]:+.4f}]"
                                     for m, x in v.items()))


if __name__ == "__main__":
    sys.exit(main())
