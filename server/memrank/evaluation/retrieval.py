"""The caller's retrievers over one conversation: BM25 and dense cosine, the candidate pool, the baselines.

BM25 indexes "speaker: text" exactly as LlamaIndex's stock ``BM25Retriever``
does (``evaluation.bm25``: bm25s, English stop words, the Snowball English
stemmer of PyStemmer, k1 1.5, b 0.75, Lucene IDF); dense is the cosine between
unit question and turn embeddings. Every method below sees the same two
retrievers' top ``POOL_PER_RETRIEVER`` lists (BM25 only where its score is
above 0). Baselines rank without the sidecar:

- ``bm25`` / ``dense``: the whole conversation by that score (ties: turn order);
- ``rrf``: sum over both full rankings of 1 / (60 + rank);
- ``minmax``: 0.5 x min-max(bm25) + 0.5 x min-max(dense), min-max over the conversation;
- ``llamaindex`` / ``llamaindex-dist``: LlamaIndex's ``QueryFusionRetriever``
  in ``relative_score`` / ``dist_based_score`` mode, weights 0.5 / 0.5, over
  the two top lists (``evaluation.peers``, pinned against the real library);
- ``langchain``: LangChain's ``EnsembleRetriever`` (weighted RRF, c = 60,
  weights 0.5 / 0.5) over the same two lists;
- ``recent``: newest session first, later turns first within a session.

The sidecar's pool is the union of the two top lists plus the turns next to
the best ``NEIGHBOURS_OF`` hits of the pool's relative-score fusion (same
session, turn number +/- 1): a stateless ranker cannot fetch a memory's
neighbours, so the caller sends them, as LlamaIndex's
``PrevNextNodePostprocessor`` would on the caller's side.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memrank.evaluation import peers
from memrank.evaluation.bm25 import bm25_scores
from memrank.evaluation.data import Conversation

POOL_PER_RETRIEVER = 100
NEIGHBOURS_OF = 20
RRF_K = 60
PEER_WEIGHTS = (0.5, 0.5)
BASELINES = ("bm25", "dense", "rrf", "minmax", "llamaindex", "llamaindex-dist", "langchain", "recent")


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
    _corpus: tuple[str, ...]

    @classmethod
    def build(cls, conv: Conversation) -> Retriever:
        """Index the conversation's turns."""
        return cls(conv, tuple(t.content for t in conv.turns))

    def bm25(self, question: str) -> np.ndarray:
        """Stemmed BM25 score of every turn (0 where no query term occurs)."""
        return bm25_scores(self._corpus, question)

    def dense(self, q_index: int) -> np.ndarray | None:
        """Cosine of every turn with the question, None without embeddings."""
        if self.conv.turn_emb is None or self.conv.question_emb is None:
            return None
        return np.asarray(self.conv.turn_emb @ self.conv.question_emb[q_index], dtype=np.float64)


def top_lists(bm25: np.ndarray, dense: np.ndarray | None,
              per: int = POOL_PER_RETRIEVER) -> list[list[tuple[int, float]]]:
    """What the two retrievers return: the top ``per`` of BM25 (score > 0) and of dense, best first."""
    lists = [peers.top_k(bm25, per, positive_only=True)]
    if dense is not None:
        lists.append(peers.top_k(dense, per))
    return lists


def neighbours(conv: Conversation, turns: np.ndarray) -> set[int]:
    """The turns next to the given ones (same session, turn number +/- 1)."""
    at = {(t.session, t.number): i for i, t in enumerate(conv.turns)}
    out: set[int] = set()
    for i in turns.tolist():
        t = conv.turns[i]
        for step in (-1, 1):
            j = at.get((t.session, t.number + step))
            if j is not None:
                out.add(j)
    return out


def pool(conv: Conversation, bm25: np.ndarray, dense: np.ndarray | None, per: int = POOL_PER_RETRIEVER,
         neighbours_of: int = NEIGHBOURS_OF) -> np.ndarray:
    """Turn indices of the candidate pool, in turn order: both top lists, plus the neighbours of the best hits."""
    lists = top_lists(bm25, dense, per)
    top = {i for hits in lists for i, _ in hits}
    if neighbours_of:
        best = peers.llamaindex_fusion(lists, PEER_WEIGHTS[: len(lists)])[:neighbours_of]
        top |= neighbours(conv, np.array(best, dtype=np.int64))
    return np.array(sorted(top), dtype=np.int64)


def baseline_orders(conv: Conversation, bm25: np.ndarray, dense: np.ndarray | None) -> dict[str, np.ndarray]:
    """Each baseline's full ranking of the conversation (turn indices, best first)."""
    n = len(conv.turns)
    out = {"bm25": _order(bm25)}
    if dense is not None:
        out["dense"] = _order(dense)
        out["rrf"] = _order(1.0 / (RRF_K + _ranks(bm25)) + 1.0 / (RRF_K + _ranks(dense)))
        out["minmax"] = _order(0.5 * _min_max(bm25) + 0.5 * _min_max(dense))
        lists = top_lists(bm25, dense)
        out["llamaindex"] = np.array(peers.llamaindex_fusion(lists, PEER_WEIGHTS), dtype=np.int64)
        out["llamaindex-dist"] = np.array(peers.llamaindex_fusion(lists, PEER_WEIGHTS, dist_based=True),
                                          dtype=np.int64)
        out["langchain"] = np.array(peers.langchain_ensemble(lists, PEER_WEIGHTS), dtype=np.int64)
    times = np.array([t.time for t in conv.turns])
    out["recent"] = np.lexsort((-np.arange(n), -times))
    return out
