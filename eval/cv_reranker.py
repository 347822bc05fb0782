"""Out-of-fold choice of the built-in `with-reranker` profile: `default`'s procedure plus the reranker signal.

    python eval/cv_reranker.py --locomo DEV.jsonl DEV.npz LOCOMO_SCORES.json \\
                               --lme LME.jsonl.gz LME.npz LME_SCORES.json \\
                               [--friendsqa FQA.jsonl.gz FQA.npz FQA_SCORES.json] [--out CV.json]
    python eval/cv_reranker.py --apply FQA.jsonl.gz FQA.npz FQA_SCORES.json [--out ROWS.json]

Each ``*_SCORES.json`` is `memrank eval --candidate-scores`'s file ``{question key: {turn id: score}}``
(``eval/rerank_scores.py``: ms-marco-MiniLM-L-12-v2 logits over each question's shortlist); only the questions
it holds are used, their requests carrying the scores as `memrank eval` sends them (a candidate without a
score goes without; the server scores it as the batch's lowest).

The procedure is ``eval/cv_shapes.py``'s ``after`` (how `default` was chosen), with ``reranker`` among the
learned signals: folds split by conversation (LoCoMo and FriendsQA: the first half of the conversations / the
rest; LongMemEval, one haystack per question: SHA-256 parity of the question id); inside each fold the listwise
softmax fit (``memrank.tuning.listwise``) on the training part, each dataset weighing the same, then lambda
among ``cv_shapes.LAMBDAS`` by the mean training recall@5 of the datasets; reported on the held-out part only.

Rows, per dataset, on the same questions: ``default`` (the shipped profile, unchanged), ``cross-encoder``
(the scored candidates by score, then the rest in LlamaIndex's relative-score order: the reranker alone over
its shortlist), ``with-reranker`` (out of fold), ``llamaindex``; paired-bootstrap intervals of with-reranker
against each. ``shipped``: the same procedure on every question given (what builtin.py ships).

``--apply``: no fit; the same rows on a dataset neither profile was fitted on, under the shipped profiles
(``with-reranker`` is builtin.py's), intervals as above: out of sample.
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
import cv  # eval/cv.py: items, the pipeline run
import cv_shapes  # eval/cv_shapes.py: the LongMemEval fold, the profile of a fit

from memrank.evaluation import report
from memrank.evaluation.metrics import score_ranking
from memrank.profiles.builtin import BUILTIN_PROFILES
from memrank.tuning.ascent import to_simplex
from memrank.tuning.dataset import Stack
from memrank.tuning.listwise import balanced, fit_linear

LEARNED = (*cv_shapes.LEARNED, "reranker")
Sets = dict[str, list[cv.Item]]


def folds(name: str, items: Sequence[cv.Item]) -> list[int]:
    """Each item's fold (0 or 1), split by conversation."""
    if name == "lme":
        return [cv_shapes.lme_fold(it.key) for it in items]
    convs = sorted({it.conversation for it in items})
    second = set(convs[len(convs) // 2:])
    return [int(it.conversation in second) for it in items]


def fit(sets: Sets) -> dict[str, float]:
    """The listwise fit over ``LEARNED`` on every dataset (each the same total weight), scaled to sum 1."""
    rows = [cv.COLUMNS.index(s) for s in LEARNED]
    items = [it for name in sets for it in sets[name]]
    queries = [replace(it.query, features=it.query.features[rows]) for it in items]
    w = fit_linear(Stack.of(queries, len(rows)), balanced([name for name in sets for _ in sets[name]]))
    shares = to_simplex(w, int(np.argmax(w)))
    return {s: float(v) for s, v in zip(LEARNED, shares.tolist(), strict=True) if v > 0}


def choose(sets: Sets) -> tuple[dict[str, float], float, dict[str, float]]:
    """Weights, then the lambda with the best mean training recall@5 of the datasets (ties: the larger)."""
    weights = fit(sets)
    tried = {str(lam): round(float(np.mean([cv_shapes.recall5(v, cv_shapes.profile(weights, lam))
                                            for v in sets.values()])), 4) for lam in cv_shapes.LAMBDAS}
    return weights, max(cv_shapes.LAMBDAS, key=lambda x: (tried[str(x)], x)), tried


def cross_encoder(items: Sequence[cv.Item]) -> list[report.Scored]:
    """The reranker alone: its scored candidates by score (ties: LlamaIndex order), then LlamaIndex's order."""
    out = []
    for it in items:
        assert it.batch.reranker is not None
        scores = dict(zip(it.batch.ids, it.batch.reranker.tolist(), strict=True))
        ref = {tid: k for k, tid in enumerate(it.llamaindex)}
        scored = sorted((t for t, s in scores.items() if s == s), key=lambda t: (-scores[t], ref.get(t, len(ref))))
        ranking = scored + [t for t in it.llamaindex if t not in set(scored)]
        out.append(report.Scored(it.category, score_ranking(ranking, it.evidence, it.tokens, it.vectors), it.key))
    return out


def evaluate(sets: Sets) -> dict[str, Any]:
    """Out-of-fold rows per dataset, the fold choices and the shipped choice."""
    fold_of = {name: folds(name, items) for name, items in sets.items()}
    rows: dict[str, dict[str, list[report.Scored]]] = {n: {} for n in sets}
    result: dict[str, Any] = {"learned": list(LEARNED), "lambdas": list(cv_shapes.LAMBDAS), "folds": []}
    for k in (0, 1):
        train = {n: [it for it, f in zip(v, fold_of[n], strict=True) if f != k] for n, v in sets.items()}
        weights, lam, tried = choose(train)
        chosen = cv_shapes.profile(weights, lam)
        result["folds"].append({"held_out": k, "weights": weights, "diversity_lambda": lam,
                                "mean_train_recall@5_by_lambda": tried})
        print(f"fold {k}: {weights} lambda {lam} {tried}", file=sys.stderr)
        for n, v in sets.items():
            test = [it for it, f in zip(v, fold_of[n], strict=True) if f == k]
            got = {"with-reranker": cv.run_pipeline(test, chosen),
                   "default": cv.run_pipeline(test, BUILTIN_PROFILES["default"]),
                   "cross-encoder": cross_encoder(test), "llamaindex": cv.reference(test)}
            for r, scored in got.items():
                rows[n].setdefault(r, []).extend(scored)
    result["out_of_fold"] = {}
    for n, by_row in rows.items():
        order = {it.key: i for i, it in enumerate(sets[n])}
        ordered = {r: sorted(v, key=lambda s: order[s.key]) for r, v in by_row.items()}
        mine = ordered["with-reranker"]
        result["out_of_fold"][n] = {
            "questions": len(mine),
            "rows": {r: report.row(r, v) for r, v in ordered.items()},
            **{f"with-reranker_vs_{r}": report.versus(mine, ordered[r])
               for r in ("default", "cross-encoder", "llamaindex")},
        }
    weights, lam, tried = choose(sets)
    result["shipped"] = {"weights": weights, "diversity_lambda": lam, "mean_recall@5_by_lambda": tried,
                         "questions": {n: len(v) for n, v in sets.items()}}
    return result


def apply(items: list[cv.Item]) -> dict[str, Any]:
    """The rows of ``evaluate`` under the shipped profiles, no fit (a dataset neither profile saw)."""
    got = {"with-reranker": cv.run_pipeline(items, BUILTIN_PROFILES["with-reranker"]),
           "default": cv.run_pipeline(items, BUILTIN_PROFILES["default"]),
           "cross-encoder": cross_encoder(items), "llamaindex": cv.reference(items)}
    mine = got["with-reranker"]
    return {"out_of_fold": {"applied": {
        "questions": len(mine), "rows": {r: report.row(r, v) for r, v in got.items()},
        **{f"with-reranker_vs_{r}": report.versus(mine, got[r]) for r in ("default", "cross-encoder", "llamaindex")},
        "default_vs_llamaindex": report.versus(got["default"], got["llamaindex"])}}}


def show(result: dict[str, Any]) -> str:
    """The out-of-fold rows and intervals as text."""
    lines = []
    for n, doc in result["out_of_fold"].items():
        lines.append(f"## {n}, {'out of sample' if n == 'applied' else 'out of fold'} ({doc['questions']} questions)")
        for r, row in doc["rows"].items():
            lines.append(f"{r:<14} " + " ".join(f"{m} {row[m]:.4f}" for m in cv_shapes.METRICS))
        for r in ("default", "cross-encoder", "llamaindex"):
            v = doc[f"with-reranker_vs_{r}"]["recall@5"]
            lines.append(f"with-reranker - {r}: recall@5 {v['delta']:+.4f} [{v['ci95'][0]:+.4f}, {v['ci95'][1]:+.4f}]")
    return "\n".join(lines)


def main() -> int:
    """Entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name in ("locomo", "lme", "friendsqa"):
        ap.add_argument(f"--{name}", nargs=3, type=Path, metavar=("DATA", "EMBEDDINGS", "SCORES"))
    ap.add_argument("--apply", nargs=3, type=Path, metavar=("DATA", "EMBEDDINGS", "SCORES"),
                    help="no fit: the shipped profiles' rows on this dataset")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    t = time.monotonic()
    if args.apply is not None:
        result = apply(cv.prepare(args.apply[0], args.apply[1],
                                  json.loads(args.apply[2].read_text(encoding="utf-8"))))
        print(show(result))
        if args.out:
            args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        return 0
    sets: Sets = {}
    for name in ("locomo", "lme", "friendsqa"):
        if (spec := getattr(args, name)) is not None:
            scores = json.loads(spec[2].read_text(encoding="utf-8"))
            sets[name] = cv.prepare(spec[0], spec[1], scores)
            print(f"{name}: {len(sets[name])} questions with scores ({time.monotonic() - t:.0f} s)", file=sys.stderr)
    if not sets:
        ap.error("give at least one dataset")
    result = evaluate(sets)
    print(show(result))
    print(json.dumps(result["shipped"], indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"{time.monotonic() - t:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
