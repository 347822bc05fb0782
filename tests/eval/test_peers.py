"""memrank.evaluation.peers and .bm25 pinned against the real LlamaIndex, LangChain and bm25s on a small fixture.

The fixture is written here (no LoCoMo text). Every expected ranking and
score in the pinning tests comes from running the real library on the same
inputs; the hand cases at the end write the formulas out.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from memrank.evaluation.bm25 import bm25_scores
from memrank.evaluation.peers import (
    _langchain_scores,
    _llamaindex_scores,
    langchain_ensemble,
    llamaindex_fusion,
    top_k,
)

# Distinct texts (LlamaIndex dedups by content hash). Stems shared: paint-, puppy/puppies, chew-, fire-, sail-.
# Turns 6 and 7 tie exactly on "sailing" (same length, one "sail" each); 19 and 20 keep only the speaker
# token after stop words ("me", "so", "do", "too" are not bm25s stop words, so they stay as tokens).
TURNS = (
    "Nora: I spent the whole weekend painting the garden fence.",
    "Theo: You painted it blue again?",
    "Nora: No, green this time. The blue paints were sold out.",
    "Theo: My sister paints portraits of dogs.",
    "Nora: Does she sell them at the market?",
    "Theo: Yes, every Saturday at the harbour market.",
    "Nora: Sailing tomorrow?",
    "Theo: Sailing tonight?",
    "Nora: I adopted a puppy called Biscuit.",
    "Theo: Biscuit is a great name for a puppy!",
    "Nora: She chewed my paintbrush last night.",
    "Theo: Puppies chew everything, mine chewed a shoe.",
    "Nora: I am taking a pottery class on Tuesdays.",
    "Theo: Pottery sounds relaxing after work.",
    "Nora: The teacher fired my first bowl in the kiln.",
    "Theo: Did the bowl survive the firing?",
    "Nora: It cracked, so I will make another one.",
    "Theo: Painting the cracks gold is a Japanese tradition.",
    "Nora: Kintsugi! I read about it.",
    "Theo: Me too.",
    "Nora: So do I.",
    "Theo: See you at the market on Saturday!",
    "Nora: See you there, bring the puppy.",
    "Theo: Will do, Biscuit loves the harbour.",
)
QUERIES = (
    "What did Nora paint?",
    "sailing plans",
    "Which puppy chewed the paintbrush?",
    "quantum entanglement",  # no word in the vocabulary: all BM25 scores 0
    "pottery bowl fired in the kiln, firing",
)
N = len(TURNS)
DIM = 8


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


_rng = np.random.default_rng(20240601)
_turn_emb = _rng.normal(size=(N, DIM))
_turn_emb[7] = _turn_emb[6]  # identical vectors: an exact dense tie
_turn_emb[20] = _turn_emb[19]
TURN_EMB = _unit(_turn_emb)
QUERY_EMB = _unit(_rng.normal(size=(len(QUERIES), DIM)))


def dense(q: int) -> np.ndarray:
    return np.asarray(TURN_EMB @ QUERY_EMB[q], dtype=np.float64)


def bm25(q: int) -> np.ndarray:
    pytest.importorskip("bm25s")
    pytest.importorskip("Stemmer")
    return bm25_scores(TURNS, QUERIES[q])


def _lists(q: int, shape: str) -> list[list[tuple[int, float]]]:
    """Two result lists for query ``q``, in one of several shapes."""
    if shape == "short":  # different lengths, BM25 positives only (may be empty)
        return [top_k(bm25(q), 10, positive_only=True), top_k(dense(q), 6)]
    if shape == "full":  # the whole conversation from both, zeros included
        return [top_k(bm25(q), N), top_k(dense(q), N)]
    if shape == "flat":  # the second list has one score for all its entries
        return [top_k(bm25(q), 8), [(i, 0.25) for i in (13, 2, 6, 21)]]
    if shape == "zeros":  # the first list all 0.0, as BM25Retriever returns for an unknown query
        return [top_k(np.zeros(N), 5), top_k(dense(q), 7)]
    raise AssertionError(shape)


SHAPES = ("short", "full", "flat", "zeros")

# ---------------------------------------------------------------- BM25 vs LlamaIndex's BM25Retriever


@pytest.fixture(scope="module")
def llama_bm25() -> Any:
    pytest.importorskip("bm25s")
    pytest.importorskip("Stemmer")
    bm25_mod = pytest.importorskip("llama_index.retrievers.bm25")
    schema = pytest.importorskip("llama_index.core.schema")
    nodes = [schema.TextNode(id_=str(i), text=t) for i, t in enumerate(TURNS)]
    return bm25_mod.BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=len(nodes))


@pytest.mark.parametrize("q", range(len(QUERIES)))
def test_bm25_scores_match_llamaindex_bm25retriever(llama_bm25: Any, q: int) -> None:
    got = llama_bm25.retrieve(QUERIES[q])
    assert len(got) == N  # every node comes back, zero scores included
    real = np.zeros(N)
    for hit in got:
        real[int(hit.node.node_id)] = hit.score
    np.testing.assert_allclose(bm25_scores(TURNS, QUERIES[q]), real, rtol=0, atol=1e-6)


def test_bm25_unknown_query_is_all_zero_and_stemming_is_on(llama_bm25: Any) -> None:
    assert not bm25(3).any()
    # "paint" only reaches painting / painted / paints through the stemmer.
    stemmed, plain = bm25_scores(TURNS, QUERIES[0]), bm25_scores(TURNS, QUERIES[0], stem=False)
    assert not np.array_equal(stemmed, plain)
    assert stemmed[1] > 0 and plain[1] == 0  # "Theo: You painted it blue again?" shares no other query word
    assert bm25(1)[6] == bm25(1)[7] > 0  # the fixture's exact BM25 tie


# ---------------------------------------------------------------- fusion vs QueryFusionRetriever


def _llama_fused(lists: list[list[tuple[int, float]]], weights: tuple[float, ...], dist_based: bool) -> list[int]:
    core_retrievers = pytest.importorskip("llama_index.core.retrievers")
    schema = pytest.importorskip("llama_index.core.schema")
    llms = pytest.importorskip("llama_index.core.llms")
    fusion = pytest.importorskip("llama_index.core.retrievers.fusion_retriever")

    class Fixed(core_retrievers.BaseRetriever):
        def __init__(self, hits: list[tuple[int, float]]) -> None:
            self._hits = hits
            super().__init__()

        def _retrieve(self, query_bundle: object) -> list[object]:
            return [schema.NodeWithScore(node=schema.TextNode(id_=str(i), text=TURNS[i]), score=s)
                    for i, s in self._hits]

    mode = fusion.FUSION_MODES.DIST_BASED_SCORE if dist_based else fusion.FUSION_MODES.RELATIVE_SCORE
    retriever = fusion.QueryFusionRetriever([Fixed(h) for h in lists], llm=llms.MockLLM(), mode=mode,
                                            similarity_top_k=10 * N, num_queries=1, use_async=False,
                                            retriever_weights=list(weights))
    return [int(n.node.node_id) for n in retriever.retrieve("the query is not used")]


@pytest.mark.parametrize("dist_based", [False, True], ids=["relative", "dist"])
@pytest.mark.parametrize("weights", [(0.5, 0.5), (0.3, 0.7), (1.0, 3.0)])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("q", range(len(QUERIES)))
def test_llamaindex_fusion_matches_query_fusion_retriever(q: int, shape: str, weights: tuple[float, float],
                                                          dist_based: bool) -> None:
    lists = _lists(q, shape)
    assert llamaindex_fusion(lists, weights, dist_based=dist_based) == _llama_fused(lists, weights, dist_based)


def test_llamaindex_fusion_tie_order_and_unsorted_lists() -> None:
    # Ties everywhere, lists not in score or index order: the fused order is the dict's insertion order.
    lists = [[(9, 1.0), (4, 3.0), (2, 1.0), (15, 3.0)], [(15, 5.0), (11, 5.0), (0, 5.0)], []]
    repeat = [[(9, 1.0), (4, 3.0), (9, 7.0), (2, 1.0)], [(15, 5.0), (11, 5.0), (0, 5.0)]]  # a repeated index
    for weights2 in ((0.5, 0.5), (0.2, 0.8)):
        assert llamaindex_fusion(repeat, weights2) == _llama_fused(repeat, weights2, False)
    for weights in ((0.5, 0.5, 0.0), (0.25, 0.25, 0.5), (1.0, 1.0, 1.0)):
        for dist_based in (False, True):
            assert llamaindex_fusion(lists, weights, dist_based) == _llama_fused(lists, weights, dist_based)


# ---------------------------------------------------------------- ensemble vs EnsembleRetriever


def _langchain_fused(lists: list[list[tuple[int, float]]], weights: tuple[float, ...], c: int = 60) -> list[int]:
    ensemble = pytest.importorskip("langchain_classic.retrievers")
    core_retrievers = pytest.importorskip("langchain_core.retrievers")
    documents = pytest.importorskip("langchain_core.documents")

    class Fixed(core_retrievers.BaseRetriever):
        hits: list[tuple[int, float]]

        def _get_relevant_documents(self, query: str, *, run_manager: object) -> list[object]:
            return [documents.Document(page_content=TURNS[i], metadata={"id": i, "score": s}) for i, s in self.hits]

    retriever = ensemble.EnsembleRetriever(retrievers=[Fixed(hits=h) for h in lists], weights=list(weights), c=c,
                                           id_key="id")
    return [d.metadata["id"] for d in retriever.invoke("the query is not used")]


@pytest.mark.parametrize("weights", [(0.5, 0.5), (0.3, 0.7), (1.0, 3.0)])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("q", range(len(QUERIES)))
def test_langchain_ensemble_matches_ensemble_retriever(q: int, shape: str, weights: tuple[float, float]) -> None:
    lists = _lists(q, shape)
    assert langchain_ensemble(lists, weights, c=60) == _langchain_fused(lists, weights, c=60)


def test_langchain_ensemble_ties_and_other_c() -> None:
    # Equal weights, mirrored ranks: 0.5/61 + 0.5/63 == 0.5/63 + 0.5/61 exactly; ties keep first appearance.
    lists = [[(7, 0.9), (3, 0.8), (5, 0.1)], [(5, 0.7), (1, 0.6), (7, 0.5)], [(2, 0.0)]]
    repeat = [[(7, 0.9), (3, 0.8), (7, 0.1)], [(5, 0.7), (3, 0.6)]]  # 7 at ranks 1 and 3 of one list: both count
    assert langchain_ensemble(repeat, (0.5, 0.5)) == _langchain_fused(repeat, (0.5, 0.5)) == [7, 3, 5]
    for weights in ((0.5, 0.5, 0.0), (1.0, 1.0, 2.0)):
        for c in (0, 1, 60):
            assert langchain_ensemble(lists, weights, c=c) == _langchain_fused(lists, weights, c=c)
    assert langchain_ensemble(lists, (0.5, 0.5, 0.0)) == [7, 5, 3, 1, 2]


# ---------------------------------------------------------------- hand-written cases


def test_top_k_by_hand() -> None:
    s = np.array([0.5, 2.0, 0.5, 0.0, -1.0])
    assert top_k(s, 4) == [(1, 2.0), (0, 0.5), (2, 0.5), (3, 0.0)]  # ties (0, 2) in index order
    assert top_k(s, 4, positive_only=True) == [(1, 2.0), (0, 0.5), (2, 0.5)]
    assert top_k(s, 0) == []
    assert top_k(np.zeros(3), 5, positive_only=True) == []
    assert all(type(i) is int and type(x) is float for i, x in top_k(s, 5))


def test_llamaindex_fusion_by_hand() -> None:
    lists = [[(0, 3.0), (1, 1.0)], [(1, 2.0), (2, 2.0)]]
    # weights 1:3 -> 0.25, 0.75. List 0: min-max (3-1)/(3-1) = 1, (1-1)/(3-1) = 0. List 1: max == min = 2 > 0 -> 1.
    got = _llamaindex_scores(lists, (1.0, 3.0))
    assert got == {0: 0.25 * 1, 1: 0.25 * 0 + 0.75 * 1, 2: 0.75 * 1}
    assert llamaindex_fusion(lists, (1.0, 3.0)) == [1, 2, 0]  # 1 and 2 tie at 0.75: 1 was met first
    # dist_based, list 0: mean 2, std sqrt(((3-2)^2 + (1-2)^2) / 2) = 1, lo = 2 - 3 = -1, hi = 5:
    # (3+1)/6 = 2/3, (1+1)/6 = 1/3, scaled by 0.25; list 1: std 0, hi == lo = 2 > 0 -> 1, by 0.75.
    got = _llamaindex_scores(lists, (1.0, 3.0), dist_based=True)
    assert got == pytest.approx({0: 0.25 * 2 / 3, 1: 0.25 / 3 + 0.75, 2: 0.75}, abs=1e-15)
    assert llamaindex_fusion(lists, (1.0, 3.0), dist_based=True) == [1, 2, 0]
    # All scores 0 in a list: max == min = 0, not > 0 -> every entry 0.
    assert _llamaindex_scores([[(4, 0.0), (5, 0.0)], [(5, 1.0), (6, 0.0)]], (0.5, 0.5)) == {4: 0.0, 5: 0.5, 6: 0.0}


def test_langchain_ensemble_by_hand() -> None:
    lists = [[(3, 0.9), (1, 0.5)], [(1, 0.7), (2, 0.1)]]
    got = _langchain_scores(lists, (0.5, 0.5), c=60)
    assert got == {3: 0.5 / 61, 1: 0.5 / 62 + 0.5 / 61, 2: 0.5 / 62}
    assert langchain_ensemble(lists, (0.5, 0.5)) == [1, 3, 2]
    # Weights are not normalised: 2 and 6 give the same order as 0.25 and 0.75, scores 8x larger.
    big, small = _langchain_scores(lists, (2.0, 6.0)), _langchain_scores(lists, (0.25, 0.75))
    assert all(math.isclose(big[i], 8 * small[i]) for i in big)
    assert langchain_ensemble(lists, (2.0, 6.0)) == langchain_ensemble(lists, (0.25, 0.75)) == [1, 2, 3]


def test_bm25_scores_by_hand() -> None:
    pytest.importorskip("bm25s")
    pytest.importorskip("Stemmer")
    corpus = ["Nora: painting", "Theo: paints the boats", "Nora: boats"]
    # Tokens (stop word "the" dropped, stemmed): [nora, paint], [theo, paint, boat], [nora, boat]; avgdl = 7/3.
    # "painted" -> "paint": df 2 of N 3, idf = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln 1.6.
    k1, b, avgdl = 1.5, 0.75, 7 / 3

    def term(tf: int, dl: int) -> float:
        return math.log(1.6) * tf / (tf + k1 * (1 - b + b * dl / avgdl))

    np.testing.assert_allclose(bm25_scores(corpus, "painted"), [term(1, 2), term(1, 3), 0.0], rtol=1e-6)
    # A repeated query token counts twice; unknown words count nothing.
    np.testing.assert_allclose(bm25_scores(corpus, "paint painting zebra"), [2 * term(1, 2), 2 * term(1, 3), 0.0],
                               rtol=1e-6)
    assert not bm25_scores(corpus, "painted", stem=False).any()
