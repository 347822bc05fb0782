"""Reproducible tuning sweep of memrank's `default` profile on the LoCoMo dev conversations.

    python eval/sweep.py --data DEV.jsonl --embeddings DEV.npz [--grid eval/sweep.yaml] [--out SWEEP.json]

Coordinate search: every candidate is the current best profile with one
stage's change applied (``eval/sweep.yaml``); each stage keeps its best
candidate by recall@5 over categories 1-4 (ties: the earlier candidate, so
the simpler one listed first wins), but only when it beats the current best
by ``min_gain`` (a guard against fitting noise). ``constraints`` pin values whatever a
stage finds (it is still measured and reported). Deterministic: no sampling,
no randomness; the same data gives the same table.

For speed the candidates run through the pure core in-process
(``memrank.core.pipeline.rank`` on the batches that
``memrank.grpc.convert.request_to_domain`` builds from the very Rank requests
`memrank eval` sends), two processes at a time. The final table of the
chosen profile comes from `memrank eval` over gRPC.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from memrank.core.batch import Batch, RankParams
from memrank.core.pipeline import rank
from memrank.evaluation import report
from memrank.evaluation.data import load_conversations
from memrank.evaluation.metrics import QuestionScores, score_ranking
from memrank.evaluation.requests import build_request, count_tokens
from memrank.evaluation.retrieval import Retriever, pool
from memrank.grpc.convert import request_to_domain
from memrank.profiles.builtin import BUILTIN_PROFILES
from memrank.profiles.model import Profile, profile_from_mapping


@dataclass(frozen=True)
class Item:
    """One question, converted once: the batch and params the server would rank."""

    category: int
    evidence: tuple[str, ...]
    batch: Batch
    params: RankParams
    tokens: Mapping[str, int]
    vectors: Mapping[str, np.ndarray] | None


_ITEMS: list[Item] = []  # filled before the worker processes fork


def prepare(data: Path, embeddings: Path | None) -> list[Item]:
    """Every question with evidence, as (batch, params), in data order."""
    items = []
    for conv in load_conversations(data, embeddings):
        retriever = Retriever.build(conv)
        tokens = {t.id: count_tokens(t.content) for t in conv.turns}
        vectors = None if conv.turn_emb is None else dict(zip([t.id for t in conv.turns], conv.turn_emb, strict=True))
        for qi, q in enumerate(conv.questions):
            if not q.evidence:
                continue
            bm25, dense = retriever.bm25(q.text), retriever.dense(qi)
            req = build_request(conv, qi, pool(bm25, dense), bm25, dense, "candidate")
            batch, params = request_to_domain(req, 0.0)
            items.append(Item(q.category, q.evidence, batch, params, tokens, vectors))
    return items


def to_profile(spec: Mapping[str, Any]) -> Profile:
    """A candidate profile from its sweep mapping: profile keys, plus ``weights`` {signal: weight}."""
    raw = {k: v for k, v in spec.items() if k != "weights"}
    if "weights" in spec:
        raw["signals"] = [{"name": s, "weight": w, "normalization": "min_max" if s == "relevance" else "none"}
                          for s, w in spec["weights"].items()]
    return profile_from_mapping("profiles.candidate", raw, BUILTIN_PROFILES["default"])


def measure(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The report row of one candidate over every prepared question."""
    profile = to_profile(spec)
    profiles = {"candidate": profile}
    scored = []
    for it in _ITEMS:
        out = rank(it.batch, replace(it.params, profile="candidate"), profiles)
        ranking = [it.batch.ids[i] for i in out.ranked]
        s: QuestionScores = score_ranking(ranking, it.evidence, it.tokens, it.vectors)
        scored.append(report.Scored(it.category, s))
    return report.row("candidate", scored)


def _merge(base: Mapping[str, Any], change: Mapping[str, Any]) -> dict[str, Any]:
    return {**base, **change}


def sweep(grid: Mapping[str, Any], jobs: int) -> dict[str, Any]:
    """Run the stages; returns every measured candidate and the chosen spec."""
    best = dict(grid["base"])
    constraints = dict(grid.get("constraints") or {})
    history = []
    seen: dict[str, dict[str, Any]] = {}  # a candidate measured once, however many stages list it
    min_gain = float(grid.get("min_gain", 0.0))

    def measure_cached(spec: Mapping[str, Any]) -> dict[str, Any]:
        key = json.dumps(spec, sort_keys=True)
        if key not in seen:
            seen[key] = measure(spec)
        return seen[key]
    with ProcessPoolExecutor(jobs) as ex:
        for stage in grid["stages"]:
            specs = [_merge(best, change) for change in stage["grid"]]
            t = time.monotonic()
            keys = [json.dumps(spec, sort_keys=True) for spec in specs]
            todo = {k: spec for k, spec in zip(keys, specs, strict=True) if k not in seen}
            seen.update(zip(todo, ex.map(measure, todo.values()), strict=True))
            rows = [seen[k] for k in keys]
            current = measure_cached(best)
            scores = [r["recall@5"] for r in rows]
            pick = int(np.argmax(scores))  # first maximum: the earlier (simpler) candidate wins ties
            if scores[pick] < current["recall@5"] + min_gain:
                pick = -1  # not worth a change: keep the current best
            for change, r in zip(stage["grid"], rows, strict=True):
                history.append({"stage": stage["name"], "change": change, **{k: r[k] for k in r if k != "profile"}})
                print(f"{stage['name']:<16} r@5 {r['recall@5']:.4f} red@5 {r['redundancy@5']:.4f} "
                      f"ndcg@10 {r['ndcg@10']:.4f}  {json.dumps(change)}", file=sys.stderr)
            change = stage["grid"][pick] if pick >= 0 else {}
            best = _merge(best, change)
            pinned = {k: v for k, v in constraints.items() if k in change}
            best.update(pinned)
            note = f" (pinned by constraints: {pinned})" if pinned else ""
            kept = "" if pick >= 0 else f" (no candidate beat the current {current['recall@5']:.4f} by {min_gain})"
            print(f"-> {stage['name']}: {json.dumps(change)}{note}{kept} [{time.monotonic() - t:.0f} s]",
                  file=sys.stderr)
    return {"chosen": best, "constraints": constraints, "history": history}


def main() -> int:
    """Entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, type=Path)
    ap.add_argument("--embeddings", type=Path)
    ap.add_argument("--grid", type=Path, default=Path(__file__).with_name("sweep.yaml"))
    ap.add_argument("--out", type=Path, help="write every measured candidate (aggregate numbers) as JSON")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    args = ap.parse_args()
    grid = yaml.safe_load(args.grid.read_text(encoding="utf-8"))
    t = time.monotonic()
    _ITEMS.extend(prepare(args.data, args.embeddings))
    print(f"prepared {len(_ITEMS)} questions in {time.monotonic() - t:.0f} s", file=sys.stderr)
    result = sweep(grid, args.jobs)
    final = measure(result["chosen"])
    result["final"] = final
    print(json.dumps({"chosen": result["chosen"], "recall@5": final["recall@5"],
                      "redundancy@5": final["redundancy@5"]}, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
