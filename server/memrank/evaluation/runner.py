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

from memrank.evaluation import report
from memrank.evaluation._deps import require
from memrank.evaluation.data import Conversation, load_conversations
from memrank.evaluation.metrics import score_ranking
from memrank.evaluation.report import SIDECAR_PROFILES
from memrank.evaluation.requests import build_request, count_tokens, ranking_of
from memrank.evaluation.retrieval import BASELINES, Retriever, baseline_orders, pool


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
    workers: int = 4
    progress: bool = True
    notes: list[str] = field(default_factory=list)


@contextmanager
def sidecar(target: str | None, config: str | None) -> Iterator[str]:
    """The address of a live sidecar: ``target``, or an in-process one on a free loopback port."""
    if target:
        yield target
        return
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
        from memrank.evaluation.embed import embed_all, load_encoder

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
    from memrank.client import RankingClient

    started = time.monotonic()
    convs = _load(opts)
    names = [*opts.baselines, *opts.profiles]
    scored: dict[str, list[report.Scored]] = {n: [] for n in names}
    total = sum(len(_questions(c, opts.limit)) for c in convs)
    with sidecar(opts.target, opts.config) as address, RankingClient(address, timeout=60) as client, \
            ThreadPoolExecutor(max(1, opts.workers)) as pool_exec, _progress(total, opts.progress) as bar:
        for conv in convs:
            _conversation(conv, opts, client.rank, pool_exec, scored, bar.update)
    names = [n for n in names if scored[n] or n in opts.profiles]  # no embeddings: no dense, rrf or minmax row
    rows = [report.row(n, scored[n]) for n in names]
    n_overall = sum(1 for s in scored[names[0]] if s.category in report.OVERALL_CATEGORIES) if names else 0
    return {
        "data": str(opts.data),
        "questions": n_overall,
        "rows": rows,
        "categories": {"overall": list(report.OVERALL_CATEGORIES), "reported_separately": [5]},
        "embeddings": str(opts.embeddings) if opts.embeddings else None,
        "explicit_lookup": opts.explicit_lookup,
        "curves": {"k": list(range(1, 21)), **{n: report.curve(scored[n]) for n in names}},
        "targets": report.targets(rows),
        "notes": opts.notes,
        "seconds": round(time.monotonic() - started, 1),
    }


def _conversation(conv: Conversation, opts: EvalOptions, rank: Callable[[Any], Any], pool_exec: ThreadPoolExecutor,
                  scored: dict[str, list[report.Scored]], tick: Callable[[int], Any]) -> None:
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
                scored[name].append(report.Scored(q.category, score_ranking(ranking, q.evidence, tokens, vectors)))
        candidates = pool(bm25, dense)
        base = build_request(conv, qi, candidates, bm25, dense, "", opts.explicit_lookup)
        requests = []
        for profile in opts.profiles:
            req = type(base)()
            req.CopyFrom(base)
            req.profile = profile
            requests.append(req)
        for profile, response in zip(opts.profiles, pool_exec.map(rank, requests), strict=True):
            ranking = ranking_of(response)
            scored[profile].append(report.Scored(q.category, score_ranking(ranking, q.evidence, tokens, vectors)))
        tick(1)


def write_report(doc: dict[str, Any], out: Path, plot_path: Path | None, baselines: Sequence[str]) -> None:
    """Write the report JSON (and the plot when asked)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    if plot_path is not None:
        curves = {k: v for k, v in doc["curves"].items() if k != "k"}
        title = f"LoCoMo {Path(doc['data']).name}: recall@k, categories 1-4 ({doc['questions']} questions)"
        report.plot(curves, baselines, plot_path, title)


def table(doc: dict[str, Any]) -> str:
    """The report's rows as a Markdown table (categories 1-4), then recall@5 per category."""
    cols = ("recall@5", "recall@10", "anyhit@5", "ndcg@10", "budget_recall@512", "redundancy@5")
    lines = ["| profile | " + " | ".join(cols) + " | " + " | ".join(f"r@5 cat {c}" for c in report.ALL_CATEGORIES)
             + " |", "|---" * (1 + len(cols) + len(report.ALL_CATEGORIES)) + "|"]
    for r in doc["rows"]:
        cats = [f"{r['by_category'][str(c)]['recall@5']:.3f}" for c in report.ALL_CATEGORIES]
        lines.append(f"| {r['profile']} | " + " | ".join(f"{r[c]:.3f}" for c in cols) + " | " + " | ".join(cats)
                     + " |")
    return "\n".join(lines)

