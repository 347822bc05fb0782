"""LlamaIndex: MemrankPostprocessor after a VectorStoreIndex retriever and a BM25 retriever, against a live server."""

from __future__ import annotations

import asyncio
import math

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.response_synthesizers.no_text import NoText
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode
from llama_index.retrievers.bm25 import BM25Retriever

from memrank.client import RankingClient
from memrank.integrations import MappingError
from memrank.integrations.llamaindex import MemrankPostprocessor
from tests.frameworks.conftest import CORPUS, QUERY, REF, candidate


def _nodes() -> list[TextNode]:
    return [TextNode(text=text, id_=ident, metadata=dict(meta)) for ident, text, meta in CORPUS]


def _index() -> VectorStoreIndex:
    return VectorStoreIndex(_nodes(), embed_model=MockEmbedding(embed_dim=8))


def _minmax(values: list[float]) -> list[float]:
    lo, hi = min(values), max(values)
    return [1.0] * len(values) if hi == lo else [(v - lo) / (hi - lo) for v in values]


def test_bm25_retriever_scores_are_min_maxed_within_the_batch(target: str, client: RankingClient) -> None:
    retriever = BM25Retriever.from_defaults(nodes=_nodes(), similarity_top_k=8)
    hits = retriever.retrieve(QUERY)
    raw = [float(h.score or 0.0) for h in hits]
    assert max(raw) > 1.0, "BM25 scores are unbounded: this batch needs the min-max rule"
    expected = dict(zip([h.node.node_id for h in hits], _minmax(raw), strict=True))
    post = MemrankPostprocessor(target=target, top_n=4, request={"referenceTime": REF})
    got = post.postprocess_nodes(hits, query_str=QUERY)
    assert len(got) == 4
    for n in got:
        assert n.node.metadata["memrank"]["retrieval_score"] == pytest.approx(expected[n.node.node_id], abs=1e-12)
    # The server's own placement of the same candidates, written out by hand (min-max is batch-relative,
    # so the adapter sends relevance_threshold 0).
    cands = [candidate(h.node.node_id, expected[h.node.node_id], dict(CORPUS[int(h.node.node_id[1:])][2]),
                       h.node.get_content()) for h in hits]
    resp = client.rank({"query": QUERY, "referenceTime": REF, "candidates": cands, "relevanceThreshold": 0.0,
                        "budget": {"maxItems": 4}})
    assert [n.node.node_id for n in got] == [m.id for m in resp.selected]
    assert [n.score for n in got] == pytest.approx([m.score for m in resp.selected], abs=1e-12)


def test_vector_index_pipeline(target: str) -> None:
    hits = _index().as_retriever(similarity_top_k=10).retrieve(QUERY)
    assert all(h.score is not None and 0.0 <= h.score <= 1.0 + 1e-9 for h in hits)
    post = MemrankPostprocessor(target=target, top_n=3, request={"referenceTime": REF})
    got = post.postprocess_nodes(hits, query_str=QUERY)
    assert len(got) == 3
    sent = {h.node.node_id: h.score for h in hits}
    for n in got:
        info = n.node.metadata["memrank"]
        assert n.score == info["score"]
        # Unit-range scores go as they are (clipped to [0, 1] only when the float rounding overshoots).
        assert info["retrieval_score"] == pytest.approx(sent[n.node.node_id], abs=1e-9)
        total = sum(s["contribution"] for s in info["signals"].values()) + info["blend_term"]
        assert math.isclose(total, info["combined_score"], abs_tol=1e-9)
        # The explanation never reaches the LLM or the embedder.
        assert "memrank" in n.node.excluded_llm_metadata_keys
        assert "memrank" not in n.node.get_content(metadata_mode=MetadataMode.LLM)
        assert "memrank" not in n.node.get_content(metadata_mode=MetadataMode.EMBED)
    assert all("memrank" not in h.node.metadata for h in hits), "the retrieved nodes are not modified"
    assert [n.node.metadata["memrank"]["rank"] for n in got] == [1, 2, 3]


def test_query_engine_with_no_text_synthesis(target: str) -> None:
    index = _index()
    post = MemrankPostprocessor(target=target, top_n=2, request={"referenceTime": REF})
    # NoText synthesises nothing; given a MockLLM it never looks for a default (remote) one.
    engine = RetrieverQueryEngine(retriever=index.as_retriever(similarity_top_k=10), node_postprocessors=[post],
                                  response_synthesizer=NoText(llm=MockLLM()))
    response = engine.query(QUERY)
    direct = post.postprocess_nodes(index.as_retriever(similarity_top_k=10).retrieve(QUERY), query_str=QUERY)
    assert [n.node.node_id for n in response.source_nodes] == [n.node.node_id for n in direct]
    assert len(response.source_nodes) == 2


def test_async_postprocess_matches_sync(target: str) -> None:
    hits = BM25Retriever.from_defaults(nodes=_nodes(), similarity_top_k=8).retrieve(QUERY)
    post = MemrankPostprocessor(target=target, top_n=3, request={"referenceTime": REF})
    sync = [(n.node.node_id, n.score) for n in post.postprocess_nodes(hits, query_str=QUERY)]
    got = asyncio.run(post.apostprocess_nodes(hits, query_str=QUERY))
    assert [(n.node.node_id, n.score) for n in got] == sync


def test_malformed_metadata_names_the_node_and_the_key(target: str) -> None:
    nodes = _nodes()
    nodes[4].metadata["position"] = -1
    hits = [NodeWithScore(node=n, score=1.0) for n in nodes]
    with pytest.raises(MappingError, match=r"document 4 \(id 't4'\): metadata\['position'\]: position must be"):
        MemrankPostprocessor(target=target).postprocess_nodes(hits, query_str=QUERY)


def test_a_node_without_a_score_among_scored_ones_is_an_error(target: str) -> None:
    hits = [NodeWithScore(node=n, score=None if i == 6 else 0.5) for i, n in enumerate(_nodes())]
    with pytest.raises(MappingError, match=r"document 6 \(id 't6'\): NodeWithScore.score: no score"):
        MemrankPostprocessor(target=target).postprocess_nodes(hits, query_str=QUERY)


def test_node_embeddings_are_sent(target: str, client: RankingClient) -> None:
    nodes = _nodes()
    for i, n in enumerate(nodes):
        n.embedding = [1.0, float(i % 3), 0.5]
    hits = [NodeWithScore(node=n, score=0.8) for n in nodes]
    got = MemrankPostprocessor(target=target, request={"referenceTime": REF}).postprocess_nodes(hits,
                                                                                              query_str=QUERY)
    cands = [{**candidate(n.node_id, 0.8, dict(CORPUS[i][2]), n.get_content()), "embedding": n.embedding}
             for i, n in enumerate(nodes)]
    resp = client.rank({"query": QUERY, "referenceTime": REF, "candidates": cands})
    assert [n.node.node_id for n in got] == [m.id for m in resp.selected]
    # Every third node has the same embedding: without them the answer differs (they reach the server).
    bare = client.rank({"query": QUERY, "referenceTime": REF,
                        "candidates": [{k: v for k, v in c.items() if k != "embedding"} for c in cands]})
    assert [m.id for m in bare.selected] != [m.id for m in resp.selected]
