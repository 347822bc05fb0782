"""The caller's retrievers over one conversation: BM25 (bm25s) and dense cosine, plus the baseline rankings.

BM25 indexes "speaker: text" with bm25s's English stop words and default
parameters (k1 1.5, b 0.75, Lucene IDF); dense is the cosine between unit
question and turn embeddings. Baselines rank the whole conversation:

- ``bm25`` / ``dense``: by that score (ties: turn order);
- ``rrf``: sum over both full rankings of 1 / (60 + rank);
- ``minmax``: 0.5 x min-max(bm25) + 0.5 x min-max(dense), min-max over the conversation;
- ``recent``: newest session first, later turns first within a session.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from memrank.evaluation._deps import require
from memrank.evaluation.data import Conversation

POOL_PER_RETRIEVER = 100
RRF_K = 60
BASELINES = ("bm25", "dense", "rrf", "minmax", "recent")


def _min_max(x: np.ndarray) -> np.ndarray:
    lo, hi = float(x.min()), float(x.max())
    return (x - lo) / (hi - lo) if hi > lo else np.full_like(x, 0.5)


def _order(scores: np.ndarray) -> np.ndarray:
    """Indices by score descending, ties in input order."""
    return np.argsort(-scores, kind="stable")


def _ranks(scores: np.ndarray) -> np.ndarray:
    """1-based rank of each index under ``_order``."""
    r = np.empty(scores.shape[0], dtype=np.int64)
    r[_order(scores)] = np.arange(1, scores.shape[0] + 1)
    return r


@dataclass
class Retriever:
    """BM25 and dense scoring over one conversation's turns."""

    conv: Conversation
    _bm25: Any

    @classmethod
    def build(cls, conv: Conversation) -> Retriever:
        """Index the conversation's turns."""
        bm25s = require("bm25s")
        corpus = bm25s.tokenize([t.content for t in conv.turns], stopwords="en", show_progress=False)
        index = bm25s.BM25()
        index.index(corpus, show_progress=False)
        return cls(conv, index)

    def bm25(self, question: str) -> np.ndarray:
        """BM25 score of every turn (0 where no query term occurs)."""
        bm25s = require("bm25s")
        words = bm25s.tokenize([question], stopwords="en", return_ids=False, show_progress=False)[0]
        vocab = self._bm25.vocab_dict
        known = [w for w in words if w in vocab]
        if not known:
            return np.zeros(len(self.conv.turns))
        return np.asarray(self._bm25.get_scores(known), dtype=np.float64)

    def dense(self, q_index: int) -> np.ndarray | None:
        """Cosine of every turn with the question, None without embeddings."""
        if self.conv.turn_emb is None or self.conv.question_emb is None:
            return None
        return np.asarray(self.conv.turn_emb @ self.conv.question_emb[q_index], dtype=np.float64)


def pool(bm25: np.ndarray, dense: np.ndarray | None, per: int = POOL_PER_RETRIEVER) -> np.ndarray:
    """Turn indices of the candidate pool: top ``per`` of BM25 (score > 0) and of dense, merged, in turn order."""
    top = [i for i in _order(bm25)[:per] if bm25[i] > 0]
    if dense is not None:
        top += list(_order(dense)[:per])
    return np.array(sorted(set(top)), dtype=np.int64)


def baseline_orders(conv: Conversation, bm25: np.ndarray, dense: np.ndarray | None) -> dict[str, np.ndarray]:
    """Each baseline's full ranking of the conversation (turn indices, best first)."""
    n = len(conv.turns)
    out = {"bm25": _order(bm25)}
    if dense is not None:
        out["dense"] = _order(dense)
        out["rrf"] = _order(1.0 / (RRF_K + _ranks(bm25)) + 1.0 / (RRF_K + _ranks(dense)))
        out["minmax"] = _order(0.5 * _min_max(bm25) + 0.5 * _min_max(dense))
    times = np.array([t.time for t in conv.turns])
    out["recent"] = np.lexsort((-np.arange(n), -times))
    return out
