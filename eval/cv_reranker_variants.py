"""Out-of-fold variants of the `with-reranker` procedure (issue #42): none met the bar on LongMemEval.

    python eval/cv_reranker_variants.py --data-dir ../shared/data --scores-dir /work/data-cache/reranker \\
        base rr_add bar lean lme_only

Each variant is ``eval/cv_reranker.py``'s procedure (folds by conversation / question, the listwise fit on
the training parts, lambda by the training parts) with one change; every number printed is held out, with
paired-bootstrap intervals against `default` (shipped), the cross-encoder alone (the pool by its score) and a
reciprocal-rank fusion (k 60) of `default`'s order and the cross-encoder's. The shipped choice of each variant
(the same procedure on all of LoCoMo and LongMemEval dev) is then run on FriendsQA (top-30 scores, not in the
fit). Variants:

- ``base``: today's procedure (reproduces the evaluation page's with-reranker rows);
- ``rr_add``: plus a prototype signal rr{k} = (k + 1) / (k + rank of the reranker score in the population)
  (a bounded reciprocal rank; the unscored get the lowest's), k chosen with lambda on the training parts;
- ``bar``: rr1 / rr3 / none x LongMemEval's share of the loss (0.5, 0.7, 0.85) x lambda (0.99, 0.95, 0.9),
  chosen by the bar itself on the training parts: the largest min over datasets of recall@5 - default's;
- ``lean``: only relevance, context, speaker, thread, reranker (+ rr1, + lexical), the same choice rule
  (on LongMemEval context, thread and speaker are constant and give their weight away, leaving relevance and
  the reranker);
- ``lme_only``: a diagnostic, not a profile: fitted on LongMemEval's training part alone (no LoCoMo).

A prototype, reverted after measuring: the rr{k} signals are registered here, not in ``memrank.core``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import memrank.core.signals as sigmod
from memrank.core.reasons import Same
from memrank.core.signals.base import RawSignal

KS = (1, 3, 5, 10, 20, 60)


def make_rr(k: float):
    def rr(batch, ctx, profile, population):
        scores = batch.reranker
        pop = np.asarray(population, dtype=bool)
        has = np.zeros(batch.n, dtype=bool) if scores is None else ~np.isnan(scores)
        rated = has & pop
        out = np.zeros(batch.n)
        if scores is None or not rated.any():
            return RawSignal(out, Same(batch.n, "absent"))
        s = scores[rated]
        srt = np.sort(s)
        r = 1 + (s.size - np.searchsorted(srt, s, side="right"))  # ties share the best rank
        vals = (k + 1.0) / (k + r)
        out[rated] = vals
        out[pop & ~has] = vals.min()
        return RawSignal(out, Same(batch.n, "rr"))
    return rr


EXTRA_SIGNALS = {f"rr{k}": make_rr(k) for k in KS}
sigmod.SIGNALS = {**sigmod.SIGNALS, **EXTRA_SIGNALS}

import cv  # noqa: E402
import cv_reranker  # noqa: E402
import cv_shapes  # noqa: E402

cv.COLUMNS = cv.COLUMNS + tuple(EXTRA_SIGNALS)

from memrank.core.pipeline import rank  # noqa: E402
from memrank.evaluation import report  # noqa: E402
from memrank.evaluation.metrics import score_ranking  # noqa: E402
from memrank.profiles.builtin import BUILTIN_PROFILES  # noqa: E402
from memrank.tuning.ascent import to_simplex  # noqa: E402
from memrank.tuning.dataset import Stack  # noqa: E402
from memrank.tuning.listwise import fit_linear  # noqa: E402


def specs(d: Path, c: Path) -> dict[str, tuple[Path, Path, Path]]:
    """Each dataset's data, embeddings and whole-pool scores (FriendsQA: top-30 scores)."""
    return {"locomo": (d / "locomo/dev.jsonl", d / "locomo/dev_minilm.npz", c / "locomo.json"),
            "lme": (d / "longmemeval/dev.jsonl.gz", d / "longmemeval/dev_minilm.npz", c / "longmemeval.json"),
            "friendsqa": (d / "friendsqa/dev.jsonl.gz", d / "friendsqa/dev_minilm.npz", c / "friendsqa-top30.json")}


def fit(sets, learned, dweights) -> dict[str, float]:
    rows = [cv.COLUMNS.index(s) for s in learned]
    items = [it for n in sets for it in sets[n]]
    queries = [replace(it.query, features=it.query.features[rows]) for it in items]
    c = np.concatenate([np.full(len(sets[n]), dweights[n] / len(sets[n])) for n in sets])
    w = fit_linear(Stack.of(queries, len(rows)), c)
    shares = to_simplex(w, int(np.argmax(w)))
    return {s: float(v) for s, v in zip(learned, shares.tolist(), strict=True) if v > 0}


def rankings(items, profile):
    out = []
    for it in items:
        res = rank(it.batch, replace(it.params, profile="candidate"), {"candidate": profile})
        out.append([it.batch.ids[i] for i in res.ranked])
    return out


def scored(items, orders):
    return [report.Scored(it.category, score_ranking(o, it.evidence, it.tokens, it.vectors), it.key)
            for it, o in zip(items, orders, strict=True)]


def r5(items, profile) -> float:
    return float(np.mean([s.metric("recall@5") for s in scored(items, rankings(items, profile))]))


def choose(train, cfg):
    """Over the cfg's feature sets x lambdas: the best mean training recall@5 (ties: the earlier, larger lambda)."""
    best = None
    tried = {}
    agg = cfg.get("agg", "mean")
    if agg == "gain":
        dflt = {n: r5(v, BUILTIN_PROFILES["default"]) for n, v in train.items()}
    for tag0, learned in cfg["feature_sets"]:
      for share in cfg.get("lme_shares", (0.5,)):
        tag = tag0 if share == 0.5 else f"{tag0} lme{share}"
        w = fit(train, learned, {"locomo": 1 - share, "lme": share})
        for lam in cfg.get("lambdas", cv_shapes.LAMBDAS):
            p = cv_shapes.profile(w, lam)
            vals = {n: r5(v, p) for n, v in train.items()}
            if agg == "mean":
                m = float(np.mean(list(vals.values())))
            elif agg == "min":
                m = min(vals.values())
            else:
                m = min(vals[n] - dflt[n] for n in vals)
            tried[f"{tag} {lam}"] = round(m, 4)
            if best is None or m > best[0] + 1e-12:
                best = (m, tag, w, lam)
    return best, tried


def fqa_profile(p):
    """The profile for FriendsQA: speaker -> speaker_pair (as shipped)."""
    sigs = tuple(replace(s, name="speaker_pair") if s.name == "speaker" else s for s in p.signals)
    return replace(p, signals=sigs)


def rrf(a, b, k=60):
    s: dict[str, float] = {}
    for lst in (a, b):
        for i, t in enumerate(lst):
            s[t] = s.get(t, 0.0) + 1.0 / (k + i + 1)
    return sorted(s, key=lambda t: -s[t])


def ce_orders(items):
    out = []
    for it in items:
        sc = dict(zip(it.batch.ids, it.batch.reranker.tolist(), strict=True))
        ref = {tid: k for k, tid in enumerate(it.llamaindex)}
        s = sorted((t for t, v in sc.items() if v == v), key=lambda t: (-sc[t], ref.get(t, len(ref))))
        out.append(s + [t for t in it.llamaindex if t not in set(s)])
    return out


VARIANTS: dict[str, dict[str, Any]] = {}
L = cv_reranker.LEARNED
VARIANTS["base"] = {"feature_sets": [("z", L)]}
VARIANTS["rr_add"] = {"feature_sets": [(f"z+rr{k}", (*L, f"rr{k}")) for k in KS]}
VARIANTS["bar"] = {"feature_sets": [("z", L), ("z+rr1", (*L, "rr1")), ("z+rr3", (*L, "rr3"))],
                   "lme_shares": (0.5, 0.7, 0.85), "lambdas": (0.99, 0.95, 0.9), "agg": "gain"}
LEAN = ("relevance", "context", "speaker", "thread", "reranker")
VARIANTS["lean"] = {"feature_sets": [("lean", LEAN), ("lean+rr1", (*LEAN, "rr1")),
                                     ("lean+rr1+lex", (*LEAN, "rr1", "lexical"))],
                    "lambdas": (0.99, 0.95, 0.9), "agg": "gain"}


def run(name: str, sets) -> dict[str, Any]:
    cfg = VARIANTS[name]
    fit_sets = {n: sets[n] for n in ("locomo", "lme")}
    fold_of = {n: cv_reranker.folds(n, v) for n, v in fit_sets.items()}
    oof: dict[str, dict[str, list]] = {n: {} for n in fit_sets}
    out: dict[str, Any] = {"variant": name, "folds": []}
    t = time.monotonic()
    for k in (0, 1):
        train = {n: [it for it, f in zip(v, fold_of[n], strict=True) if f != k] for n, v in fit_sets.items()}
        (m, tag, w, lam), tried = choose(train, cfg)
        out["folds"].append({"tag": tag, "weights": w, "lambda": lam, "tried": tried})
        print(f"[{name}] fold {k}: {tag} lam {lam} train {m:.4f} {w} ({time.monotonic() - t:.0f}s)", file=sys.stderr)
        p = cv_shapes.profile(w, lam)
        for n, v in fit_sets.items():
            test = [it for it, f in zip(v, fold_of[n], strict=True) if f == k]
            mine = rankings(test, p)
            dflt = rankings(test, BUILTIN_PROFILES["default"])
            ce = ce_orders(test)
            rows = {"variant": mine, "default": dflt, "cross-encoder": ce,
                    "rrf(default,ce)": [rrf(a, b) for a, b in zip(dflt, ce, strict=True)],
                    "rrf(variant,ce)": [rrf(a, b) for a, b in zip(mine, ce, strict=True)]}
            for r, o in rows.items():
                oof[n].setdefault(r, []).extend(scored(test, o))
    out["oof"] = {}
    for n, by in oof.items():
        order = {it.key: i for i, it in enumerate(fit_sets[n])}
        ordered = {r: sorted(v, key=lambda s: order[s.key]) for r, v in by.items()}
        doc = {"rows": {r: report.row(r, v) for r, v in ordered.items()}}
        for r in ordered:
            if r != "variant":
                doc[f"vs {r}"] = report.versus(ordered["variant"], ordered[r])
        doc["rrf(default,ce) vs default"] = report.versus(ordered["rrf(default,ce)"], ordered["default"])
        out["oof"][n] = doc
    (m, tag, w, lam), tried = choose(fit_sets, cfg)
    out["shipped"] = {"tag": tag, "weights": w, "lambda": lam, "tried": tried}
    fq = sets["friendsqa"]
    p = fqa_profile(cv_shapes.profile(w, lam))
    a, b = scored(fq, rankings(fq, p)), scored(fq, rankings(fq, BUILTIN_PROFILES["default"]))
    out["friendsqa"] = {"rows": {"variant(shipped)": report.row("v", a), "default": report.row("d", b)},
                        "vs default": report.versus(a, b)}
    print(f"[{name}] shipped {tag} lam {lam} {w} ({time.monotonic() - t:.0f}s)", file=sys.stderr)
    return out


def show(out):
    lines = [f"== {out['variant']}: folds " + "; ".join(f"{f['tag']} {f['lambda']}" for f in out["folds"])]
    for n, doc in out["oof"].items():
        lines.append(f"-- {n}: " + " ".join(f"{r} {row['recall@5']:.4f}" for r, row in doc["rows"].items()))
        for r in ("default", "cross-encoder", "rrf(default,ce)"):
            v = doc[f"vs {r}"]["recall@5"]
            lines.append(f"   variant - {r}: {v['delta']:+.4f} [{v['ci95'][0]:+.4f}, {v['ci95'][1]:+.4f}]")
        v = doc["rrf(default,ce) vs default"]["recall@5"]
        lines.append(f"   rrf(default,ce) - default: {v['delta']:+.4f} [{v['ci95'][0]:+.4f}, {v['ci95'][1]:+.4f}]")
    f = out["friendsqa"]
    v = f["vs default"]["recall@5"]
    lines.append(f"-- friendsqa (shipped {out['shipped']['tag']} {out['shipped']['lambda']}): "
                 f"{f['rows']['variant(shipped)']['recall@5']:.4f} vs default {f['rows']['default']['recall@5']:.4f}"
                 f" {v['delta']:+.4f} [{v['ci95'][0]:+.4f}, {v['ci95'][1]:+.4f}]")
    return "\n".join(lines)


def lme_only(lme) -> str:
    """LongMemEval alone: fitted and lambda chosen on its training part, scored on the held-out part."""
    fo = cv_reranker.folds("lme", lme)
    dflt = scored(lme, rankings(lme, BUILTIN_PROFILES["default"]))
    ce = scored(lme, ce_orders(lme))
    lines = []
    for tag, learned in (("L+z", L), ("rel+z", ("relevance", "reranker")), ("L+z+rr1", (*L, "rr1"))):
        got: list[Any] = [None] * len(lme)
        lams = []
        for k in (0, 1):
            tr = [it for it, f in zip(lme, fo, strict=True) if f != k]
            w = fit({"lme": tr}, learned, {"lme": 1.0})
            lam = max((0.99, 0.95, 0.9), key=lambda x: (round(r5(tr, cv_shapes.profile(w, x)), 4), x))
            lams.append(lam)
            idx = [i for i, f in enumerate(fo) if f == k]
            for i, x in zip(idx, scored([lme[i] for i in idx], rankings([lme[i] for i in idx],
                                                                        cv_shapes.profile(w, lam))), strict=True):
                got[i] = x
        a, b = report.versus(got, dflt)["recall@5"], report.versus(got, ce)["recall@5"]
        lines.append(f"lme_only {tag} (lambdas {lams}): recall@5 {np.mean([x.metric('recall@5') for x in got]):.4f}; "
                     f"- default {a['delta']:+.4f} [{a['ci95'][0]:+.4f}, {a['ci95'][1]:+.4f}]; "
                     f"- cross-encoder {b['delta']:+.4f} [{b['ci95'][0]:+.4f}, {b['ci95'][1]:+.4f}]")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--scores-dir", type=Path, required=True)
    ap.add_argument("--out-dir", type=Path)
    ap.add_argument("variants", nargs="+", choices=(*VARIANTS, "lme_only"))
    args = ap.parse_args()
    sets = {}
    t = time.monotonic()
    for n, (a, b, c) in specs(args.data_dir, args.scores_dir).items():
        sets[n] = cv.prepare(a, b, json.loads(c.read_text(encoding="utf-8")))
        print(n, len(sets[n]), f"{time.monotonic() - t:.0f}s", file=sys.stderr)
    for name in args.variants:
        if name == "lme_only":
            print(lme_only(sets["lme"]), flush=True)
            continue
        o = run(name, sets)
        if args.out_dir:
            (args.out_dir / f"{name}.json").write_text(json.dumps(o, indent=1) + "\n", encoding="utf-8")
        print(show(o), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
