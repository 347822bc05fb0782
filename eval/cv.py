"""Cross-validated choice of memrank's `default` profile on the LoCoMo dev conversations.

    python eval/cv.py --data DEV.jsonl --embeddings DEV.npz [--out CV.json]

The protocol (README, Evaluation): split the dev conversations by
conversation into two folds (the first half of the conversations and the
rest); on one fold choose the signal weights and the diversity lambda, report
on the other, then swap. Only the out-of-fold numbers are results. The
shipped weights are the same procedure run on every dev conversation.

Choosing, on the training conversations only:

1. every question's candidates are scored once in-process with every signal
   in ``SIGNALS`` (``memrank.core.scoring.combine`` on the batches
   ``memrank.api.convert.request_to_domain`` builds from the very Rank
   requests `memrank eval` sends), keeping each signal's normalised column;
2. weights: coordinate ascent on recall@5 of the linear score
   sum(w_s x normalised_s) (relevance fixed at 1, each other weight from
   ``GRID``, three rounds; a change is kept only when it gains recall@5),
   then scaled to sum to 1 (the profile's combined score stays in [0, 1];
   three decimals, the rounding remainder given to relevance). The fitter
   and the metric are ``memrank.tuning``'s, the ones `memrank tune` runs;
   here from relevance alone, coordinates in ``SIGNALS`` order;
3. lambda: the full pipeline (``memrank.core.pipeline.rank``: gates, MMR,
   calibration) with each of ``LAMBDAS``; the best recall@5 wins, ties to the
   larger lambda (less re-ordering). 1.0 is not among them: it turns the
   covering-set pass off, and with it the dropping of near-copies
   (``dedupe_threshold``) that `default` promises (it measured +0.006
   recall@5 over 0.9 on all six conversations, within noise).

Reporting: the full pipeline on the held-out conversations, compared with
LlamaIndex's relative-score fusion on the same questions (paired bootstrap).
Deterministic: no sampling except the seeded bootstrap.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from memrank.api.convert import request_to_domain
from memrank.core.batch import Batch, RankParams
from memrank.core.pipeline import rank
from memrank.core.profile import Profile, SignalSpec
from memrank.evaluation import report
from memrank.evaluation.data import load_conversations
from memrank.evaluation.metrics import score_ranking
from memrank.evaluation.requests import build_request, count_tokens
from memrank.evaluation.retrieval import Retriever, baseline_orders, pool
from memrank.profiles.builtin import BUILTIN_PROFILES
from memrank.tuning.ascent import GRID, coordinate_ascent, to_simplex
from memrank.tuning.dataset import Query, Stack
from memrank.tuning.metrics import Metric, Objective
from memrank.tuning.queries import query_of

SIGNALS = ("relevance", "lexical", "context", "speaker", "importance", "recency")
# Columns ``prepare`` also keeps, for ``eval/cv_shapes.py``'s listwise fit (this script's fit never reads them).
EXTRA = ("thread", "length", "hop", "statement", "date", "reranker")
COLUMNS = SIGNALS + EXTRA
NORMALIZATION = {"relevance": "min_max"}
LAMBDAS = (0.95, 0.9, 0.8, 0.7)
ROUNDS = 3


@dataclass(frozen=True)
class Item:
    """One question, converted once."""

    conversation: str
    key: str
    category: int
    evidence: tuple[str, ...]
    batch: Batch
    params: RankParams
    query: Query  # the COLUMNS' normalised columns, the gate and the evidence (memrank.tuning)
    tokens: Mapping[str, int]
    vectors: Mapping[str, np.ndarray] | None
    llamaindex: tuple[str, ...]  # the reference ranking (turn ids)


def _all_signals(base: Profile) -> Profile:
    specs = tuple(SignalSpec(s, 1.0, NORMALIZATION.get(s, "none")) for s in COLUMNS)
    return replace(base, name="cv", signals=specs)


def prepare(data: Path, embeddings: Path | None,
            reranker: Mapping[str, Mapping[str, float]] | None = None) -> list[Item]:
    """Every question of categories 1-4 with evidence, scored once with every signal of ``COLUMNS``.

    With ``reranker`` (``{question key: {turn id: score}}``, `memrank eval --candidate-scores`'s file), only the
    questions it holds, their requests carrying the scores as `memrank eval` sends them."""
    items = []
    profile = _all_signals(BUILTIN_PROFILES["default"])
    for conv in load_conversations(data, embeddings):
        retriever = Retriever.build(conv)
        ids = [t.id for t in conv.turns]
        tokens = {t.id: count_tokens(t.content) for t in conv.turns}
        vectors = None if conv.turn_emb is None else dict(zip(ids, conv.turn_emb, strict=True))
        for qi, q in enumerate(conv.questions):
            if not q.evidence or q.category not in report.OVERALL_CATEGORIES or \
                    (reranker is not None and q.key not in reranker):
                continue
            bm25, dense = retriever.bm25(q.text), retriever.dense(qi)
            scores = None if reranker is None else reranker[q.key]
            req = build_request(conv, qi, pool(conv, bm25, dense), bm25, dense, "cv", reranker=scores)
            batch, params = request_to_domain(req, 0.0)
            query = query_of(batch, params, profile, dict.fromkeys(q.evidence, 1.0), q.key, conv.id)
            ref = tuple(ids[i] for i in baseline_orders(conv, bm25, dense)["llamaindex"])
            items.append(Item(conv.id, q.key, q.category, q.evidence, batch, params, query, tokens, vectors, ref))
    return items


def fit_weights(items: Sequence[Item]) -> dict[str, float]:
    """Coordinate ascent on linear recall@5 (``memrank.tuning``); relevance fixed at 1, then scaled to sum 1."""
    queries = [replace(it.query, features=it.query.features[:len(SIGNALS)]) for it in items]
    objective = Objective(Stack.of(queries, len(SIGNALS)), Metric("recall", 5))
    start = np.array([1.0] + [0.0] * (len(SIGNALS) - 1))  # relevance alone
    fit = coordinate_ascent(objective, start, anchor=0, grid=GRID, rounds=ROUNDS)
    shares = to_simplex(fit.weights, anchor=0)  # three decimals, the rounding left to relevance: sum 1
    return {s: float(v) for s, v, raw in zip(SIGNALS, shares.tolist(), fit.weights.tolist(), strict=True) if raw > 0}


def profile_of(weights: Mapping[str, float], lam: float) -> Profile:
    """The default profile with these weights and lambda."""
    specs = tuple(SignalSpec(s, w, NORMALIZATION.get(s, "none")) for s, w in weights.items())
    return replace(BUILTIN_PROFILES["default"], name="candidate", signals=specs, diversity_lambda=lam)


def run_pipeline(items: Sequence[Item], profile: Profile) -> list[report.Scored]:
    """Each question through the full core pipeline under the profile."""
    out = []
    for it in items:
        res = rank(it.batch, replace(it.params, profile="candidate"), {"candidate": profile})
        ranking = [it.batch.ids[i] for i in res.ranked]
        out.append(report.Scored(it.category, score_ranking(ranking, it.evidence, it.tokens, it.vectors), it.key))
    return out


def reference(items: Sequence[Item]) -> list[report.Scored]:
    """LlamaIndex's relative-score fusion on the same questions."""
    return [report.Scored(it.category, score_ranking(list(it.llamaindex), it.evidence, it.tokens, it.vectors), it.key)
            for it in items]


def choose(items: Sequence[Item]) -> tuple[dict[str, float], float, dict[str, float]]:
    """Weights, then lambda, chosen on these items only; also each lambda's recall@5."""
    weights = fit_weights(items)
    tried = {}
    for lam in LAMBDAS:
        rows = run_pipeline(items, profile_of(weights, lam))
        tried[str(lam)] = round(float(np.mean([s.metric("recall@5") for s in rows])), 4)
    lam = max(LAMBDAS, key=lambda x: (tried[str(x)], x))
    return weights, lam, tried


def main() -> int:
    """Entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, type=Path)
    ap.add_argument("--embeddings", type=Path)
    ap.add_argument("--out", type=Path, help="write folds, weights and out-of-fold metrics as JSON")
    args = ap.parse_args()
    t = time.monotonic()
    items = prepare(args.data, args.embeddings)
    convs = sorted({it.conversation for it in items}, key=lambda c: [int(x) if x.isdigit() else x
                                                                       for x in c.replace("-", " ").split()])
    half = len(convs) // 2
    folds = [convs[half:], convs[:half]]  # held-out conversations of each fold
    print(f"prepared {len(items)} questions of {len(convs)} conversations in {time.monotonic() - t:.0f} s",
          file=sys.stderr)
    result: dict[str, Any] = {"signals": list(SIGNALS), "grid": list(GRID), "lambdas": list(LAMBDAS), "folds": []}
    oof: list[report.Scored] = []
    oof_ref: list[report.Scored] = []
    for held in folds:
        train = [it for it in items if it.conversation not in held]
        test = [it for it in items if it.conversation in held]
        weights, lam, tried = choose(train)
        mine, ref = run_pipeline(test, profile_of(weights, lam)), reference(test)
        oof += mine
        oof_ref += ref
        fold = {"train": sorted({it.conversation for it in train}), "held_out": held, "weights": weights,
                "diversity_lambda": lam, "train_recall@5_by_lambda": tried,
                "test": report.row("default", mine), "test_reference": report.row("llamaindex", ref)}
        result["folds"].append(fold)
        print(f"fold test={held}: weights {weights} lambda {lam} -> test r@5 {fold['test']['recall@5']:.4f} "
              f"(llamaindex {fold['test_reference']['recall@5']:.4f})", file=sys.stderr)
    key_order = {it.key: i for i, it in enumerate(items)}
    oof.sort(key=lambda s: key_order[s.key])
    oof_ref.sort(key=lambda s: key_order[s.key])
    result["out_of_fold"] = {"default": report.row("default", oof), "llamaindex": report.row("llamaindex", oof_ref),
                             "vs_llamaindex": report.versus(oof, oof_ref)}
    weights, lam, tried = choose(items)
    result["shipped"] = {"weights": weights, "diversity_lambda": lam, "recall@5_by_lambda": tried}
    r5 = result["out_of_fold"]["vs_llamaindex"]["recall@5"]
    print(f"out of fold: default r@5 {result['out_of_fold']['default']['recall@5']:.4f} vs llamaindex "
          f"{result['out_of_fold']['llamaindex']['recall@5']:.4f}: {r5['delta']:+.4f} {r5['ci95']}", file=sys.stderr)
    print(json.dumps(result["shipped"], indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"{time.monotonic() - t:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
