"""`memrank eval`: retrieve, rank through a live sidecar over gRPC, score, report.

Per question (with evidence): BM25 and dense score every turn; the baselines
rank the whole conversation; the pool (top 100 of each retriever, merged)
goes as one Rank request per sidecar profile. The sidecar is the one at
``target``, or one started in-process on a free loopback port.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memrank.client import RankingClient
from memrank.evaluation import report
from memrank.evaluation._deps import require
from memrank.evaluation.candidate_scores import CandidateScores
from memrank.evaluation.data import Conversation, load_conversations
from memrank.evaluation.embed import embed_all, load_encoder
from memrank.evaluation.metrics import score_ranking
from memrank.evaluation.report import SIDECAR_PROFILES
from memrank.evaluation.requests import build_request, count_tokens, ranking_of
from memrank.evaluation.retrieval import (
    BASELINES,
    NEIGHBOURS_OF,
    POOL_PER_RETRIEVER,
    Retriever,
    baseline_orders,
    pool,
)


@dataclass(frozen=True)
class EvalOptions:
    """What to evaluate and how."""

    data: Path
    embeddings: Path | None = None
    target: str | None = None
    config: str | None = None
    profiles: Sequence[str] = SIDECAR_PROFILES
    baselines: Sequence[str] = BASELINES
    explicit_lookup: bool = True
    limit: int = 0  # questions per conversation, 0 = all
    reference: str = "llamaindex"  # row every other row is compared with (paired bootstrap)
    per_question: Path | None = None  # JSON lines of every question's metrics per row
    workers: int = 4
    progress: bool = True
    candidate_scores: CandidateScores = field(default_factory=CandidateScores)  # --candidate-scores
    notes: list[str] = field(default_factory=list)


@contextmanager
def sidecar(target: str | None, config: str | None) -> Iterator[str]:
    """The address of a live sidecar: ``target``, or an in-process one on a free loopback port."""
    if target:
        yield target
        return
    # Only without --target: the in-process server (gRPC server, servicer, scoring core) loads for this case alone.
    from memrank.config import SettingsSource
    from memrank.grpc.server import create_server

    settings = SettingsSource(config).load()
    settings = replace(settings, server=replace(settings.server, address="127.0.0.1:0", metrics_port=0))
    running = create_server(settings)
    try:
        yield f"127.0.0.1:{running.port}"
    finally:
        running.stop(0)


def _load(opts: EvalOptions) -> list[Conversation]:
    convs = load_conversations(opts.data, opts.embeddings)
    if opts.embeddings is None:
        encoder, note = load_encoder()
        opts.notes.append(note)
        print(f"memrank eval: {note}", file=sys.stderr)
        if encoder is not None:
            convs = embed_all(convs, encoder)
    return convs


def _progress(total: int, enabled: bool) -> Any:
    tqdm = require("tqdm")
    return tqdm.tqdm(total=total, unit="q", desc="memrank eval", file=sys.stderr, disable=not enabled)


def _questions(conv: Conversation, limit: int) -> list[int]:
    idx = [i for i, q in enumerate(conv.questions) if q.evidence]
    return idx[:limit] if limit else idx


def evaluate(opts: EvalOptions) -> dict[str, Any]:
    """Run the evaluation and return the report (see ``report.row`` for the row shape)."""
    started = time.monotonic()
    convs = _load(opts)
    names = [*opts.baselines, *opts.profiles]
    scored: dict[str, list[report.Scored]] = {n: [] for n in names}
    total = sum(len(_questions(c, opts.limit)) for c in convs)
    pool_sizes: list[int] = []
    pool_recall: list[float] = []
    with sidecar(opts.target, opts.config) as address, RankingClient(address, timeout=60) as client, \
            ThreadPoolExecutor(max(1, opts.workers)) as pool_exec, _progress(total, opts.progress) as bar:
        for conv in convs:
            _conversation(conv, opts, client.rank, pool_exec, scored, bar.update, pool_sizes, pool_recall)
    names = [n for n in names if scored[n] or n in opts.profiles]  # no embeddings: no dense, rrf or minmax row
    rows = [report.row(n, scored[n]) for n in names]
    reference = opts.reference if opts.reference in names else None
    if reference is None:
        opts.notes.append(f"reference row {opts.reference!r} absent: no paired intervals")
    for r in rows:
        if reference is not None and r["profile"] != reference:
            r["vs_reference"] = report.versus(scored[r["profile"]], scored[reference])
    if opts.per_question is not None:
        write_per_question(opts.per_question, scored)
    n_overall = sum(1 for s in scored[names[0]] if s.category in report.OVERALL_CATEGORIES) if names else 0
    return {
        "data": str(opts.data),
        "questions": n_overall,
        "rows": rows,
        "categories": {"overall": list(report.OVERALL_CATEGORIES), "reported_separately": [5]},
        "embeddings": str(opts.embeddings) if opts.embeddings else None,
        "explicit_lookup": opts.explicit_lookup,
        "reference": reference,
        "pool": {"per_retriever": POOL_PER_RETRIEVER, "neighbours_of": NEIGHBOURS_OF,
                 "mean_size": round(sum(pool_sizes) / max(1, len(pool_sizes)), 1),
                 "recall": round(sum(pool_recall) / max(1, len(pool_recall)), 4)},
        "curves": {"k": list(range(1, 21)), **{n: report.curve(scored[n]) for n in names}},
        "targets": report.targets(rows, reference),
        **({"candidate_scores": summary} if (summary := opts.candidate_scores.summary()) else {}),
        "notes": opts.notes,
        "seconds": round(time.monotonic() - started, 1),
    }


def _conversation(conv: Conversation, opts: EvalOptions, rank: Callable[[Any], Any], pool_exec: ThreadPoolExecutor,
                  scored: dict[str, list[report.Scored]], tick: Callable[[int], Any], pool_sizes: list[int],
                  pool_recall: list[float]) -> None:
    retriever = Retriever.build(conv)
    ids = [t.id for t in conv.turns]
    tokens = {t.id: count_tokens(t.content) for t in conv.turns}
    vectors = None if conv.turn_emb is None else dict(zip(ids, conv.turn_emb, strict=True))
    for qi in _questions(conv, opts.limit):
        q = conv.questions[qi]
        bm25, dense = retriever.bm25(q.text), retriever.dense(qi)
        orders = baseline_orders(conv, bm25, dense)
        for name in opts.baselines:
            if name in orders:
                ranking = [ids[i] for i in orders[name]]
                scored[name].append(report.Scored(q.category, score_ranking(ranking, q.evidence, tokens, vectors),
                                                  q.key))
        candidates = pool(conv, bm25, dense)
        if q.category in report.OVERALL_CATEGORIES:
            pool_sizes.append(len(candidates))
            in_pool = {ids[i] for i in candidates.tolist()}
            pool_recall.append(sum(1 for e in q.evidence if e in in_pool) / len(q.evidence))
        base = build_request(conv, qi, candidates, bm25, dense, "", opts.explicit_lookup,
                             opts.candidate_scores.of(q.key))
        if q.category in report.OVERALL_CATEGORIES:
            opts.candidate_scores.count(q.key, [ids[i] for i in candidates.tolist()])
        requests = []
        for profile in opts.profiles:
            req = type(base)()
            req.CopyFrom(base)
            req.profile = profile
            requests.append(req)
        for profile, response in zip(opts.profiles, pool_exec.map(rank, requests), strict=True):
            ranking = ranking_of(response)
            scored[profile].append(report.Scored(q.category, score_ranking(ranking, q.evidence, tokens, vectors),
                                                 q.key))
        tick(1)


def write_report(doc: dict[str, Any], out: Path, plot_path: Path | None, baselines: Sequence[str]) -> None:
    """Write the report JSON (and the plot when asked)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    if plot_path is not None:
        curves = {k: v for k, v in doc["curves"].items() if k != "k"}
        # The data set by its file name: the same harness runs LoCoMo, LongMemEval, FriendsQA and the synthetic set.
        title = f"{Path(doc['data']).name}: recall@k, categories 1-4 ({doc['questions']} questions)"
        report.plot(curves, baselines, plot_path, title)


def write_per_question(path: Path, scored: dict[str, list[report.Scored]]) -> None:
    """One JSON line per (row, question): its key, category and every compared metric."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for name, items in scored.items():
            for s in items:
                f.write(json.dumps({"row": name, "key": s.key, "category": s.category,
                                    **{m: round(s.metric(m), 6) for m in report.COMPARED}}) + "\n")


def table(doc: dict[str, Any]) -> str:
    """The report's rows as a Markdown table (categories 1-4), then recall@5 per category."""
    cols = ("recall@5", "recall@10", "anyhit@5", "ndcg@10", "budget_recall@512", "redundancy@5")
    ref = doc.get("reference") or "reference"
    lines = ["| profile | " + " | ".join(cols) + f" | Δ r@5 vs {ref} [95% CI] | "
             + " | ".join(f"r@5 cat {c}" for c in report.ALL_CATEGORIES) + " |",
             "|---" * (2 + len(cols) + len(report.ALL_CATEGORIES)) + "|"]
    for r in doc["rows"]:
        cats = [f"{r['by_category'][str(c)]['recall@5']:.3f}" for c in report.ALL_CATEGORIES]
        vs = r.get("vs_reference", {}).get("recall@5")
        delta = f"{vs['delta']:+.3f} [{vs['ci95'][0]:+.3f}, {vs['ci95'][1]:+.3f}]" if vs else "–"
        lines.append(f"| {r['profile']} | " + " | ".join(f"{r[c]:.3f}" for c in cols) + f" | {delta} | "
                     + " | ".join(cats) + " |")
    return "\n".join(lines)

