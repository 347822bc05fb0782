"""The replay workload: one LoCoMo conversation's questions in order, each sending its retrieval pool, as an agent
asking many questions of one memory store would (``bench.replay`` times it).

Each question's request is what ``memrank.evaluation`` sends for it (``requests.build_request``: the pool of both
retrievers' top lists and the neighbours of the best hits, "speaker: text" contents, BM25 and dense facets, the
session as thread, default profile, explicit lookup), with a budget of ``K`` memories, as the other benches ask.
The caller's form is the one the README shows: a dict of candidates and a numpy embedding matrix. LoCoMo stays
outside the repository: ``DATA`` (or ``--data``) points at it and the bench says so and stops when it is absent.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.data import K, Workload
from memrank._gen.v1 import ranking_pb2 as pb
from memrank.core.batch import CandidateInput

DATA = Path("/work/shared/data/locomo")


@dataclass(frozen=True)
class Question:
    """One question of the replay: the client's dict and matrix, the request message, and LangChain's batch."""

    key: str
    request: dict[str, Any]
    embeddings: np.ndarray  # float32 (n, 384), a row per candidate
    message: pb.RankRequest  # the same request as a message (embeddings packed), for in-process calls
    workload: Workload  # the same pool for bench.baselines.langchain_rank


def missing(data: Path) -> str | None:
    """Why the replay cannot run on ``data`` (None: it can)."""
    for name in ("dev.jsonl", "dev_minilm.npz"):
        if not (data / name).is_file():
            return f"LoCoMo data absent: {data / name} not found (see bench/README.md, replay)"
    return None


def _rfc3339(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat().replace("+00:00", "Z")


def _as_dict(req: pb.RankRequest) -> dict[str, Any]:
    """The request as a caller writes it: protobuf-JSON keys, RFC 3339 times, embeddings left for the matrix."""
    cands = [{"id": c.id, "content": c.content, "retrievalScore": c.retrieval_score,
              "facetScores": dict(c.facet_scores), "tokenCount": c.token_count, "thread": c.thread,
              "position": c.position, "speaker": c.speaker,
              "createdAt": _rfc3339(c.created_at.seconds), "lastAccessedAt": _rfc3339(c.last_accessed_at.seconds)}
             for c in req.candidates]
    return {"requestId": req.request_id, "query": req.query, "profile": req.profile,
            "referenceTime": _rfc3339(req.reference_time.seconds), "placement": "PLACEMENT_BEST_FIRST",
            "explicitLookup": req.explicit_lookup, "explain": "EXPLAIN_LEVEL_NONE",
            "budget": {"maxItems": K}, "candidates": cands}


def _workload(req: pb.RankRequest, emb: np.ndarray, query: np.ndarray) -> Workload:
    rows = tuple(CandidateInput(id=c.id, content=c.content, retrieval_score=c.retrieval_score,
                                created_at=float(c.created_at.seconds),
                                last_accessed_at=float(c.last_accessed_at.seconds)) for c in req.candidates)
    return Workload(len(rows), emb.shape[1], rows, req, req, emb, query)


def questions(data: Path = DATA, conversation: int = 0, limit: int = 0) -> list[Question]:
    """The conversation's questions with evidence, in order (the first ``limit`` when > 0)."""
    from memrank.evaluation.data import load_conversations
    from memrank.evaluation.requests import build_request
    from memrank.evaluation.retrieval import Retriever, pool

    conv = load_conversations(data / "dev.jsonl", data / "dev_minilm.npz")[conversation]
    assert conv.turn_emb is not None and conv.question_emb is not None
    retriever = Retriever.build(conv)
    out = []
    for qi, q in enumerate(conv.questions):
        if not q.evidence:
            continue
        bm25, dense = retriever.bm25(q.text), retriever.dense(qi)
        turns = pool(conv, bm25, dense)
        req = build_request(conv, qi, turns, bm25, dense, "default")
        req.budget.max_items = K
        emb = np.ascontiguousarray(conv.turn_emb[turns], dtype=np.float32)
        packed = pb.RankRequest()
        packed.CopyFrom(req)
        for c in packed.candidates:
            c.ClearField("embedding")
        packed.embeddings_f32, packed.embedding_dim = emb.astype("<f4").tobytes(), emb.shape[1]
        for c in req.candidates:
            c.ClearField("embedding")
        out.append(Question(q.key, _as_dict(req), emb, packed,
                            _workload(req, emb, conv.question_emb[qi].astype(np.float32))))
        if limit and len(out) == limit:
            break
    return out


def seen_share(qs: list[Question]) -> float:
    """Share of the candidates of all questions that an earlier question of the replay already sent."""
    seen: set[str] = set()
    repeated = total = 0
    for q in qs:
        contents = [c["content"] for c in q.request["candidates"]]
        repeated += sum(c in seen for c in contents)
        total += len(contents)
        seen.update(contents)
    return repeated / max(1, total)
