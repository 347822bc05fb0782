"""Synthetic labelled Rank requests whose relevance comes from known weights, and their signals computed here.

Each query asks for three made-up words (short, so no stemmer changes them and
no stop-word list holds them); each candidate has a retrieval_score, a few
words (each query word with probability 0.3) and an age in hours, so the
default profile's relevance, lexical and recency signals differ. Importance is
sent (0.5 for all) and there is no thread, position or speaker: the other
three default signals are constant. ``queries`` computes the normalised
signals from the formulas (README, Signals), independently of memrank:

    relevance = minmax(retrieval_score)
    lexical   = sum(idf(t), t in query found) / sum(idf(t), t in query),  idf(t) = ln((1 + N) / (1 + df(t))) + 1
    recency   = max(0.05, 0.995 ** hours)
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
from google.protobuf import json_format

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.convert import seconds_to_ts

VOCABULARY = ("zork", "vlim", "trask", "blont", "qwip", "drav", "snib", "glat", "frup", "kweb", "plon", "mung")
DEFAULT_SIGNALS = ("relevance", "lexical", "context", "speaker", "importance", "recency")
REFERENCE = 1_780_000_000.0  # unix seconds
CANDIDATES = 30
RELEVANT = 3  # the top 3 under the true weights are relevant


@dataclass(frozen=True)
class Synthetic:
    """One query: its request, its independently computed columns (signal, candidate) and its labels."""

    request: pb.RankRequest
    columns: np.ndarray
    relevant: dict[str, float]
    group: str


def columns(query: list[str], words: list[list[str]], retrieval: np.ndarray, hours: np.ndarray) -> np.ndarray:
    """The six default signals' normalised columns, from the formulas."""
    n = len(words)
    df = {t: sum(1 for w in words if t in w) for t in query}
    idf = {t: math.log((1 + n) / (1 + df[t])) + 1 for t in query}
    lexical = np.array([sum(idf[t] for t in query if t in w) / sum(idf.values()) for w in words])
    relevance = (retrieval - retrieval.min()) / (retrieval.max() - retrieval.min())
    recency = np.maximum(0.05, 0.995 ** hours)
    zero = np.zeros(n)
    return np.stack([relevance, lexical, zero, zero, np.full(n, 0.5), recency])


def true_order(cols: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Candidates by sum(w x column), best first, ties in candidate order."""
    return np.argsort(-(weights @ cols), kind="stable")


def query(rng: np.random.Generator, weights: np.ndarray, index: int, group: str, noise: float = 0.0,
          graded: bool = False) -> Synthetic:
    """One query labelled by the true weights: its top 3 (plus gaussian noise of that sd), graded 2, 1, 1 or 1s."""
    q = [str(w) for w in rng.choice(VOCABULARY, size=3, replace=False)]
    others = [w for w in VOCABULARY if w not in q]
    words = [[t for t in q if rng.random() < 0.3] + [str(w) for w in rng.choice(others, size=3, replace=False)]
             for _ in range(CANDIDATES)]
    retrieval = np.round(rng.random(CANDIDATES), 6)
    hours = np.round(rng.uniform(0, 600, CANDIDATES), 3)
    cands = []
    for j in range(CANDIDATES):
        c = pb.Candidate(id=f"m{j}", content=" ".join(words[j]), retrieval_score=float(retrieval[j]), importance=0.5,
                         token_count=10 + j % 7)
        c.created_at.CopyFrom(seconds_to_ts(REFERENCE - float(hours[j]) * 3600.0))
        cands.append(c)
    req = pb.RankRequest(request_id=f"q{index}", query=" ".join(q), candidates=cands, explicit_lookup=True)
    req.reference_time.CopyFrom(seconds_to_ts(REFERENCE))
    cols = columns(q, words, retrieval, hours)
    noisy = weights @ cols + noise * rng.standard_normal(CANDIDATES)
    top = np.argsort(-noisy, kind="stable")[:RELEVANT].tolist()
    grades = [2.0 if graded and r == 0 else 1.0 for r in range(RELEVANT)]
    return Synthetic(req, cols, {f"m{j}": g for j, g in zip(top, grades, strict=True)}, group)


def queries(seed: int, count: int, weights: np.ndarray, groups: int = 10, noise: float = 0.0,
            graded: bool = False) -> list[Synthetic]:
    """``count`` queries in ``groups`` groups, from one seed."""
    rng = np.random.default_rng(seed)
    return [query(rng, weights, i, f"g{i % groups}", noise, graded) for i in range(count)]


def labels_line(s: Synthetic) -> str:
    """The --labels line of a query."""
    return json.dumps({"request": json_format.MessageToDict(s.request), "relevant": s.relevant, "group": s.group})


def recall_at(items: list[Synthetic], weights: np.ndarray, k: int = 5) -> float:
    """Mean recall@k of ranking every query by the weights over its independent columns."""
    out = []
    for s in items:
        top = {f"m{j}" for j in true_order(s.columns, weights)[:k].tolist()}
        out.append(len(top & set(s.relevant)) / len(s.relevant))
    return float(np.mean(out))


def ndcg_at(items: list[Synthetic], weights: np.ndarray, k: int = 10) -> float:
    """Mean nDCG@k, grades as gains: sum g / log2(rank + 1) over the top k, over the same for the ideal order."""
    out = []
    for s in items:
        ranked = true_order(s.columns, weights)[:k].tolist()
        dcg = sum(s.relevant.get(f"m{j}", 0.0) / math.log2(r + 2) for r, j in enumerate(ranked))
        ideal = sum(g / math.log2(r + 2) for r, g in enumerate(sorted(s.relevant.values(), reverse=True)[:k]))
        out.append(dcg / ideal)
    return float(np.mean(out))
