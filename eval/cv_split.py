"""Weights by the batch's shape (turns or sessions), out of fold: issue #42's shape-aware profile, tried.

    python eval/cv_split.py --locomo DEV.jsonl DEV.npz SCORES.json --lme LME.jsonl.gz LME.npz SCORES.json \\
                            [--friendsqa FQA.jsonl.gz FQA.npz TOP30.json] [--out SPLIT.json]

The rule, written before any held-out number:

- a batch is *sessions* when it has two or more candidates and each is alone in its (named) thread, else
  *turns* (every LongMemEval request is sessions, no LoCoMo or FriendsQA request is);
- turn weights: the listwise fit of ``eval/cv_reranker.py`` on the LoCoMo training part alone, lambda among
  ``LAMBDAS`` by its training recall@5; session weights: the same on the LongMemEval training part alone;
- ``unsplit``: one weight vector fitted on both training parts (today's procedure, lambda as the split's);
- signals: `default`'s learned ones, and with ``reranker`` for `with-reranker` (the whole-pool scores);
- kept for a profile when out of fold it is at least ``unsplit`` on LoCoMo and on LongMemEval, and FriendsQA
  (turn weights of all LoCoMo dev, out of sample, top-30 scores) is not below the shipped profile.

Also ``--rank-features``: the linear recall@5 out of fold (no pipeline) of `default`'s fit with reciprocal-rank
columns, (K + 1) / (K + r) of a candidate's rank r in the batch by relevance, lexical, the bm25 or the dense facet.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cv
import cv_reranker
import cv_shapes

from memrank.evaluation import report
from memrank.profiles.builtin import BUILTIN_PROFILES
from memrank.tuning.dataset import Stack
from memrank.tuning.listwise import balanced, fit_linear
from memrank.tuning.metrics import Metric, Objective

LAMBDAS = (0.99, 0.95, 0.9, 0.8)
Choice = tuple[dict[str, float], float]


def is_sessions(it: cv.Item) -> bool:
    """Two or more candidates, each alone in its named thread."""
    th = it.batch.threads
    return len(th) >= 2 and all(th) and len(set(th)) == len(th)


def choose(learned: tuple[str, ...], parts: dict[str, list[cv.Item]]) -> Choice:
    """The listwise fit on these parts (each the same weight), lambda by their mean training recall@5."""
    cv_reranker.LEARNED = learned
    w = cv_reranker.fit(parts)
    tried = {lam: round(float(np.mean([cv_shapes.recall5(v, cv_shapes.profile(w, lam)) for v in parts.values()])), 4)
             for lam in LAMBDAS}
    return w, max(LAMBDAS, key=lambda x: (tried[x], x))


def run(items: list[cv.Item], turn: Choice, sessions: Choice) -> list[report.Scored]:
    """Each item through the pipeline with its shape's weights."""
    return [s for it in items
            for s in cv.run_pipeline([it], cv_shapes.profile(*(sessions if is_sessions(it) else turn)))]


def split(sets: dict[str, list[cv.Item]], fqa: list[cv.Item] | None) -> dict[str, Any]:
    """The out-of-fold rows of both profiles; FriendsQA with the all-dev turn weights."""
    fold_of = {n: cv_reranker.folds(n, v) for n, v in sets.items()}
    out: dict[str, Any] = {}
    for label, learned in (("default", cv_shapes.LEARNED), ("with-reranker", (*cv_shapes.LEARNED, "reranker"))):
        rows: dict[str, dict[str, list[report.Scored]]] = {n: {} for n in sets}
        folds = []
        for k in (0, 1):
            tr = {n: [it for it, f in zip(v, fold_of[n], strict=True) if f != k] for n, v in sets.items()}
            turn, sess = choose(learned, {"locomo": tr["locomo"]}), choose(learned, {"lme": tr["lme"]})
            both = choose(learned, tr)
            folds.append({"turns": turn, "sessions": sess, "unsplit": both})
            for n, v in sets.items():
                te = [it for it, f in zip(v, fold_of[n], strict=True) if f == k]
                got = {"split": run(te, turn, sess), "unsplit": run(te, both, both),
                       "shipped": cv.run_pipeline(te, BUILTIN_PROFILES[label])}
                for r, s in got.items():
                    rows[n].setdefault(r, []).extend(s)
        doc: dict[str, Any] = {"folds": folds}
        for n, by in rows.items():
            order = {it.key: i for i, it in enumerate(sets[n])}
            by = {r: sorted(v, key=lambda s: order[s.key]) for r, v in by.items()}
            doc[n] = {"rows": {r: report.row(r, v) for r, v in by.items()},
                      **{f"split_vs_{r}": report.versus(by["split"], by[r]) for r in ("unsplit", "shipped")}}
        if fqa is not None:
            turn = choose(learned, {"locomo": sets["locomo"]})
            mine, shipped = run(fqa, turn, turn), cv.run_pipeline(fqa, BUILTIN_PROFILES[label])
            doc["friendsqa"] = {"turns": turn, "rows": {"split": report.row("split", mine),
                                                        "shipped": report.row("shipped", shipped)},
                                "split_vs_shipped": report.versus(mine, shipped)}
        out[label] = doc
    return out


def rr(col: np.ndarray, eligible: np.ndarray, k: int) -> np.ndarray:
    """(k + 1) / (k + r), r the 1-based rank by ``col`` among the eligible (ties: candidate order), 0 elsewhere."""
    order = np.argsort(-np.where(eligible, col, -np.inf), kind="stable")
    r = np.empty(col.size)
    r[order] = np.arange(1, col.size + 1)
    return np.where(eligible, (k + 1) / (k + r), 0.0)


def rank_features(sets: dict[str, list[cv.Item]]) -> dict[str, Any]:
    """Linear recall@5 out of fold of the listwise fit (both datasets, balanced) with each set of rank columns."""
    base = [cv.COLUMNS.index(s) for s in cv_shapes.LEARNED]
    fold_of = {n: cv_reranker.folds(n, v) for n, v in sets.items()}

    def columns(it: cv.Item) -> dict[str, np.ndarray]:
        e, f, b = it.query.eligible, it.query.features, it.batch
        facet = {x: np.nan_to_num(b.facets.get(x, np.zeros(b.n)), nan=-1.0) for x in ("bm25", "dense")}
        src = {"rel": f[cv.COLUMNS.index("relevance")], "lex": f[cv.COLUMNS.index("lexical")],
               "bm": facet["bm25"], "de": facet["dense"]}
        return {f"rr_{x}{k}": rr(v, e, k) for x, v in src.items() for k in (1, 5)}

    extra = {n: [columns(it) for it in v] for n, v in sets.items()}

    def queries(n: str, idx: list[int], names: list[str]) -> list[Any]:
        return [replace(sets[n][i].query, features=np.vstack(
            [sets[n][i].query.features[base], *[extra[n][i][x][None, :] for x in names]])) for i in idx]

    def oof(names: list[str]) -> dict[str, np.ndarray]:
        got: dict[str, list[tuple[int, float]]] = {n: [] for n in sets}
        for k in (0, 1):
            tr = {n: [i for i, f in enumerate(fold_of[n]) if f != k] for n in sets}
            qs = [q for n in sets for q in queries(n, tr[n], names)]
            w = fit_linear(Stack.of(qs, len(base) + len(names)), balanced([n for n in sets for _ in tr[n]]))
            for n in sets:
                te = [i for i, f in enumerate(fold_of[n]) if f == k]
                obj = Objective(Stack.of(queries(n, te, names), len(base) + len(names)), Metric("recall", 5))
                got[n] += list(zip(te, obj.per_query(w).tolist(), strict=True))
        return {n: np.array([v for _, v in sorted(r)]) for n, r in got.items()}

    ref = oof([])
    out: dict[str, Any] = {"base": {n: float(v.mean()) for n, v in ref.items()}}
    trials = [[x] for x in extra["locomo"][0]] + [["rr_rel1", "rr_lex1"], ["rr_rel1", "rr_lex1", "rr_bm1", "rr_de1"]]
    for names in trials:
        got = oof(names)
        out["+".join(names)] = {n: {"recall@5": round(float(got[n].mean()), 4), **interval(got[n] - ref[n])}
                                for n in sets}
        print("+".join(names), out["+".join(names)], file=sys.stderr)
    return out


def interval(d: np.ndarray) -> dict[str, Any]:
    """The mean difference and its paired-bootstrap 95 % interval (2,000 resamples, seed 0)."""
    rng = np.random.default_rng(0)
    means = d[rng.integers(0, d.size, (2000, d.size))].mean(axis=1)
    return {"delta": round(float(d.mean()), 4), "ci95": [round(float(np.percentile(means, q)), 4) for q in (2.5, 97.5)]}


def main() -> int:
    """Entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name in ("locomo", "lme", "friendsqa"):
        ap.add_argument(f"--{name}", nargs=3, type=Path, metavar=("DATA", "EMBEDDINGS", "SCORES"))
    ap.add_argument("--rank-features", action="store_true", help="the reciprocal-rank columns' linear screen only")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.locomo is None or args.lme is None:
        ap.error("give --locomo and --lme")

    def load(spec: list[Path]) -> list[cv.Item]:
        return cv.prepare(spec[0], spec[1], json.loads(spec[2].read_text(encoding="utf-8")))

    sets = {"locomo": load(args.locomo), "lme": load(args.lme)}
    if args.rank_features:
        result = rank_features(sets)
    else:
        result = split(sets, None if args.friendsqa is None else load(args.friendsqa))
    text = json.dumps(result, indent=1, default=list)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
