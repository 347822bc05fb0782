"""Synthetic, seeded ranking batches shaped like agent memory (same batches for memrank and the baselines)."""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.convert import seconds_to_ts
from memrank.core.batch import CandidateInput
from tests.support.columnar import candidate_message

REFERENCE_TIME = 1_767_225_600.0  # 2026-01-01T00:00:00Z
QUERY = "which database did we decide to use for the billing service and why"
_KINDS = ("decision", "fact", "preference", "failure", "attempt", "", "correction", "outcome")
_WORDS = (
    "the", "we", "decided", "to", "use", "postgres", "for", "billing", "service", "because", "latency", "matters",
    "user", "prefers", "dark", "mode", "deploy", "failed", "on", "friday", "after", "migration", "rollback",
    "fixed", "tomorrow", "meeting", "about", "the", "api", "gateway", "never", "store", "secrets", "in", "logs",
    "always", "run", "tests", "before", "merge", "my", "name", "is", "alex", "I", "live", "in", "berlin", "database",
    "index", "query", "cache", "redis", "kafka", "queue", "retry", "timeout", "budget", "token", "memory",
    "agent", "prompt", "customer", "invoice", "payment", "refund", "schema", "version", "release", "incident",
    "postmortem", "alert", "dashboard",
)
_SOURCES = (3, 4, 5, 6, 8)
K = 20  # memories selected per request (budget.max_items); LangChain MMR picks the same k


@dataclass(frozen=True)
class Workload:
    """One benchmark batch: rows for the core, the proto request, and what the baselines read."""

    n: int
    dim: int  # 0 = no embeddings
    rows: tuple[CandidateInput, ...]
    request: pb.RankRequest  # embeddings packed into embeddings_f32 (the fastest path)
    repeated: pb.RankRequest  # the same request with each candidate's repeated-float embedding
    embeddings: np.ndarray | None  # float32 (n, dim), unit rows
    query_embedding: np.ndarray | None


def _content(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def _embeddings(n: int, dim: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Clustered unit vectors (topics plus noise), so diversity has near-duplicates to remove."""
    gen = np.random.default_rng(seed)
    topics = gen.standard_normal((max(4, n // 20), dim))
    pick = gen.integers(0, topics.shape[0], size=n)
    vectors = topics[pick] + 0.35 * gen.standard_normal((n, dim))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    query = topics[0] + 0.1 * gen.standard_normal(dim)
    return vectors.astype(np.float32), (query / np.linalg.norm(query)).astype(np.float32)


def workload(n: int, dim: int = 0, words: int = 40, seed: int = 7) -> Workload:
    """n candidates of about ``words`` words each, with 384-dim (or ``dim``) embeddings when dim > 0."""
    rng = random.Random(seed * 100_003 + n)
    emb, query_emb = _embeddings(n, dim, seed) if dim else (None, None)
    rows = []
    for i in range(n):
        created = REFERENCE_TIME - rng.uniform(0, 90 * 86400)
        rows.append(CandidateInput(
            id=f"m{i:05d}", layer=rng.choice(("session", "durable", "knowledge")), kind=rng.choice(_KINDS),
            content=_content(rng, words), retrieval_score=round(rng.random(), 6),
            importance=round(rng.random(), 3) if rng.random() < 0.3 else None,
            access_count=rng.randint(0, 30), created_at=created,
            last_accessed_at=(created + rng.uniform(0, REFERENCE_TIME - created)) if rng.random() < 0.5
            else None,
            source=rng.choice(_SOURCES), safety=1,
            embedding=tuple(emb[i].tolist()) if emb is not None else (),
        ))
    budget = pb.Budget(max_tokens=4000, max_items=K)
    req = pb.RankRequest(request_id="bench", query=QUERY, profile="default", budget=budget,
                         candidates=[candidate_message(r) for r in rows])
    req.reference_time.CopyFrom(seconds_to_ts(REFERENCE_TIME))
    packed = pb.RankRequest()
    packed.CopyFrom(req)
    if emb is not None:
        for c in packed.candidates:
            c.ClearField("embedding")
        packed.embeddings_f32 = emb.astype("<f4").tobytes()
        packed.embedding_dim = dim
    return Workload(n, dim, tuple(rows), packed, req, emb, query_emb)
