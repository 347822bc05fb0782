"""The peer libraries' stock hybrid fusion, reimplemented without them (numpy and the standard library only).

Pinned against the real libraries by tests/eval/test_peers.py (LlamaIndex
0.14 ``QueryFusionRetriever``, LangChain ``EnsembleRetriever`` from
langchain-classic 1.0). Arrays and indices are over the turns of one
conversation; a result list is what one retriever returned, ``[(turn index,
score), ...]``, best first. The index stands for the node / document
identity (see "Identity" below).

``top_k(scores, k, positive_only)``: the ``k`` best ``(index, float(score))``
by score descending, ties in index order; ``positive_only`` drops scores
<= 0. This is memrank's convention, not bm25s's: LlamaIndex's
``BM25Retriever`` always returns ``similarity_top_k`` nodes (capped at the
corpus size), zero scores included (a query with no known word gives k nodes
all scored 0.0), and orders ties as bm25s's ``argpartition`` + flipped
``argsort`` leaves them (implementation-defined; with bm25s 0.3.16 and
numpy 2.4 the test fixture's tie 6 = 7 comes back as 7, 6 and an all-zero
result in reverse index order).

``llamaindex_fusion(lists, weights, dist_based)`` =
``QueryFusionRetriever(mode=relative_score | dist_based_score,
num_queries=1, retriever_weights=weights)`` before its ``similarity_top_k``
cut:

- weights: ``w_j = weights[j] / sum(weights)``;
- per list ``j`` with scores ``s`` (an empty list contributes nothing):
  relative_score: ``lo = min(s)``, ``hi = max(s)``;
  dist_based_score: ``m = sum(s) / n``, ``sd = (sum((x - m) ** 2) / n) ** 0.5``
  (population std), ``lo = m - 3 sd``, ``hi = m + 3 sd``;
- each entry: ``x' = (x - lo) / (hi - lo)``, or, when ``hi == lo``,
  ``x' = 1.0 if hi > 0 else 0.0``; then ``x' * w_j`` (then ``/ num_queries``
  = 1). With dist_based, ``x'`` is not clipped to [0, 1];
- fused score of a node = sum of its weighted ``x'`` over the lists it is in
  (a node missing from a list gets nothing from it), accumulated left to
  right from 0 as LlamaIndex does (first entry, then ``+`` each later one);
- order: score descending by Python's stable sort, so ties keep the order in
  which nodes were first met: list 0 in its given order, then the new nodes
  of list 1 in its order, and so on. The lists' own order matters only
  there; their scores are not re-sorted.

``langchain_ensemble(lists, weights, c)`` =
``EnsembleRetriever.weighted_reciprocal_rank`` with ``id_key`` = the index:

- fused score of a document = sum over lists ``j`` and the 1-based positions
  ``r`` at which it appears in list ``j`` of ``weights[j] / (r + c)``,
  accumulated from 0.0 in list order. The weights are NOT normalised, and
  the retrievers' scores are ignored: only the lists' order counts;
- order: score descending by Python's stable sort over the documents
  deduplicated by first appearance in list 0 + list 1 + ..., so ties keep
  that first-appearance order.

Identity: LlamaIndex dedups nodes by ``node.hash`` (sha256 of text +
metadata), not node id, and LangChain without ``id_key`` by page_content:
two turns with the same text would be one node there. Here every index is
its own node (what LlamaIndex does when every text is distinct, and
LangChain with ``id_key``). An index repeated inside one list (``top_k``
never does that): LlamaIndex's ``BaseRetriever.retrieve`` keeps only its
first entry, before the min-max, and so does ``llamaindex_fusion``;
LangChain adds ``w / (r + c)`` for every position, and so does
``langchain_ensemble``.

The arithmetic is Python float arithmetic in the libraries' order (builtin
``sum`` included), so fused scores, hence tie orders, are bit-for-bit the
libraries'.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Hit = tuple[int, float]


def top_k(scores: np.ndarray, k: int, positive_only: bool = False) -> list[tuple[int, float]]:
    """The ``k`` best ``(index, score)``, best first, ties in index order; ``positive_only`` drops scores <= 0."""
    s = np.asarray(scores, dtype=np.float64)
    if k <= 0 or s.size == 0:
        return []
    order = np.argsort(-s, kind="stable")[:k]
    hits = [(int(i), float(s[i])) for i in order]
    if positive_only:
        hits = [h for h in hits if h[1] > 0]
    return hits


def _check(lists: Sequence[list[Hit]], weights: Sequence[float]) -> None:
    if len(lists) != len(weights):
        raise ValueError(f"{len(lists)} result lists but {len(weights)} weights")


def _llamaindex_scores(lists: Sequence[list[Hit]], weights: Sequence[float],
                       dist_based: bool = False) -> dict[int, float]:
    """Fused score of every node, in LlamaIndex's insertion order (first met first)."""
    _check(lists, weights)
    total = sum(weights)
    w = [x / total for x in weights]
    fused: dict[int, float] = {}
    for j, given in enumerate(lists):
        first: dict[int, float] = {}
        for i, x in given:
            first.setdefault(i, x)  # the retriever keeps the first entry of a repeated node id
        hits = list(first.items())
        if not hits:
            continue
        s = [float(x) for _, x in hits]
        if dist_based:
            mean = sum(s) / len(s)
            std = (sum((x - mean) ** 2 for x in s) / len(s)) ** 0.5
            lo, hi = mean - 3 * std, mean + 3 * std
        else:
            lo, hi = min(s), max(s)
        for (i, _), x in zip(hits, s, strict=True):
            scaled = (1.0 if hi > 0 else 0.0) if hi == lo else (x - lo) / (hi - lo)
            contrib = scaled * w[j] / 1  # / num_queries (1), kept for the operation order
            fused[i] = fused[i] + contrib if i in fused else contrib
    return fused


def llamaindex_fusion(lists: Sequence[list[tuple[int, float]]], weights: Sequence[float],
                      dist_based: bool = False) -> list[int]:
    """LlamaIndex relative-score (or dist-based) fusion of the lists: every node any list returned, best first."""
    fused = _llamaindex_scores(lists, weights, dist_based)
    return sorted(fused, key=lambda i: fused[i], reverse=True)


def _langchain_scores(lists: Sequence[list[Hit]], weights: Sequence[float], c: int = 60) -> dict[int, float]:
    """Weighted RRF score of every document, in first-appearance order."""
    _check(lists, weights)
    fused: dict[int, float] = {}
    for hits, weight in zip(lists, weights, strict=True):
        for rank, (i, _) in enumerate(hits, start=1):
            fused[i] = fused.get(i, 0.0) + weight / (rank + c)
    return fused


def langchain_ensemble(lists: Sequence[list[tuple[int, float]]], weights: Sequence[float], c: int = 60) -> list[int]:
    """LangChain EnsembleRetriever's weighted reciprocal rank fusion of the result lists, best first."""
    fused = _langchain_scores(lists, weights, c)
    return sorted(fused, key=lambda i: fused[i], reverse=True)
