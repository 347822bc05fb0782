"""LangChain: MemrankCompressor inside ContextualCompressionRetriever, against a live server."""

from __future__ import annotations

import asyncio
import math
import warnings

import pytest
from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

from memrank.client import RankingClient, RankingError
from memrank.integrations import MappingError, MetadataKeys
from memrank.integrations.langchain import MemrankCompressor
from tests.frameworks.conftest import CORPUS, QUERY, REF, candidate

with warnings.catch_warnings():
    # langchain-community announces its sunset on import; BM25Retriever still lives there.
    warnings.simplefilter("ignore", DeprecationWarning)
    from langchain_community.retrievers import BM25Retriever


def _docs() -> list[Document]:
    return [Document(page_content=text, metadata=dict(meta), id=ident) for ident, text, meta in CORPUS]


def _vector_retriever(k: int = 8) -> object:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_documents(_docs())
    return store.as_retriever(search_kwargs={"k": k})


def _order_scores(n: int) -> list[float]:
    """The README's rule for documents without scores: the i-th of n (0-based) gets (n - i) / n."""
    return [(n - i) / n for i in range(n)]


def _expected_ids(client: RankingClient, hits: list[Document], top_n: int | None = None,
                  **request: object) -> list[str]:
    """The server's own placement for the same hits, with the candidates written out by hand."""
    cands = [candidate(d.id or "", s, {k: v for k, v in d.metadata.items()}, d.page_content)
             for d, s in zip(hits, _order_scores(len(hits)), strict=True)]
    body: dict[str, object] = {"query": QUERY, "referenceTime": REF, "candidates": cands,
                               "relevanceThreshold": 0.0, **request}
    if top_n is not None:
        body["budget"] = {"maxItems": top_n}
    return [m.id for m in client.rank(body).selected]


def test_vector_store_pipeline_follows_the_servers_placement(target: str, client: RankingClient) -> None:
    base = _vector_retriever()
    hits = base.invoke(QUERY)  # type: ignore[attr-defined]
    compressor = MemrankCompressor(target=target, top_n=4, request={"referenceTime": REF})
    retriever = ContextualCompressionRetriever(base_compressor=compressor, base_retriever=base)
    got = retriever.invoke(QUERY)
    assert [d.id for d in got] == _expected_ids(client, hits, top_n=4)
    assert len(got) == 4
    by_id = {d.id: d for d in hits}
    for d in got:
        info = d.metadata["memrank"]
        assert d.page_content == by_id[d.id].page_content
        assert info["id"] == d.id
        # The caller's metadata is kept; the explanation is added beside it.
        assert {k: v for k, v in d.metadata.items() if k != "memrank"} == by_id[d.id].metadata
        assert "memrank" not in by_id[d.id].metadata, "the retriever's documents are not modified"
        total = sum(s["contribution"] for s in info["signals"].values()) + info["blend_term"]
        assert math.isclose(total, info["combined_score"], abs_tol=1e-9)
        assert {"relevance", "lexical"} <= set(info["signals"])
        assert isinstance(info["reasons"], list)
    assert [d.metadata["memrank"]["rank"] for d in got] == [1, 2, 3, 4]  # best first by default
    compressor.close()


def test_bm25_pipeline_scores_follow_the_retrievers_order(target: str, client: RankingClient) -> None:
    base = BM25Retriever.from_documents(_docs(), k=6)
    hits = base.invoke(QUERY)
    assert all("score" not in d.metadata for d in hits), "LangChain's BM25Retriever returns no scores"
    expected = dict(zip([d.id for d in hits], _order_scores(len(hits)), strict=True))
    retriever = ContextualCompressionRetriever(
        base_compressor=MemrankCompressor(target=target, request={"referenceTime": REF}), base_retriever=base)
    got = retriever.invoke(QUERY)
    assert [d.id for d in got] == _expected_ids(client, hits)
    assert got, "the decision turn matches the query"
    for d in got:
        assert d.metadata["memrank"]["retrieval_score"] == pytest.approx(expected[d.id], abs=1e-12)


def test_scores_in_metadata_are_sent_as_they_are_when_in_unit_range(target: str) -> None:
    docs = [Document(page_content=text, metadata={**meta, "score": 0.3 + 0.05 * i}, id=ident)
            for i, (ident, text, meta) in enumerate(CORPUS)]
    got = MemrankCompressor(target=target, request={"referenceTime": REF}).compress_documents(docs, QUERY)
    sent = {d.id: d.metadata["score"] for d in docs}
    assert got
    for d in got:
        assert d.metadata["memrank"]["retrieval_score"] == pytest.approx(sent[d.id], abs=1e-12)


def test_async_path_gives_the_same_answer(target: str) -> None:
    base = _vector_retriever()
    retriever = ContextualCompressionRetriever(
        base_compressor=MemrankCompressor(target=target, top_n=3, request={"referenceTime": REF}),
        base_retriever=base)
    sync = [(d.id, d.metadata["memrank"]["score"]) for d in retriever.invoke(QUERY)]
    # Two event loops in a row: the async client opens a channel per loop.
    for _ in range(2):
        got = asyncio.run(retriever.ainvoke(QUERY))
        assert [(d.id, d.metadata["memrank"]["score"]) for d in got] == sync


def test_placement_best_last_puts_rank_one_last(target: str) -> None:
    got = MemrankCompressor(target=target, top_n=5, request={"referenceTime": REF,
                                                              "placement": "PLACEMENT_BEST_LAST"}
                            ).compress_documents(_docs(), QUERY)
    assert [d.metadata["memrank"]["rank"] for d in got] == [5, 4, 3, 2, 1]
    assert [d.metadata["memrank"]["position"] for d in got] == [0, 1, 2, 3, 4]


def test_malformed_metadata_names_the_document_and_the_key(target: str) -> None:
    docs = _docs()
    docs[3].metadata["importance"] = "very"
    retriever = ContextualCompressionRetriever(
        base_compressor=MemrankCompressor(target=target), base_retriever=BM25Retriever.from_documents(docs, k=10))
    with pytest.raises(MappingError) as err:
        retriever.invoke(QUERY)
    assert "'t3'" in str(err.value) and "metadata['importance']" in str(err.value)
    assert err.value.key == "metadata['importance']"


def test_missing_required_key_is_an_error_not_a_default(target: str) -> None:
    docs = _docs()
    del docs[5].metadata["created_at"]
    compressor = MemrankCompressor(target=target, keys=MetadataKeys(required=("created_at",)))
    with pytest.raises(MappingError, match=r"document 5 \(id 't5'\): metadata\['created_at'\]: absent"):
        compressor.compress_documents(docs, QUERY)


def test_configured_keys_are_read(target: str) -> None:
    docs = [Document(page_content=text, metadata={"when": meta["created_at"], "conv": meta["thread"],
                                                   "turn": meta["position"], "who": meta["speaker"]}, id=ident)
            for ident, text, meta in CORPUS]
    keys = MetadataKeys(created_at="when", thread="conv", position="turn", speaker="who")
    renamed = MemrankCompressor(target=target, keys=keys, request={"referenceTime": REF}).compress_documents(
        docs, QUERY)
    plain = MemrankCompressor(target=target, request={"referenceTime": REF}).compress_documents(
        [Document(page_content=text, metadata={k: meta[k] for k in ("created_at", "thread", "position", "speaker")},
                  id=ident) for ident, text, meta in CORPUS], QUERY)
    assert [(d.id, d.metadata["memrank"]["score"]) for d in renamed] == \
        [(d.id, d.metadata["memrank"]["score"]) for d in plain]
    # The context signal sees the neighbours only through thread/position.
    assert any(s > 0 for d in renamed for s in [d.metadata["memrank"]["signals"]["context"]["raw"]])


def test_a_server_refusal_names_the_document(target: str) -> None:
    docs = _docs()
    docs[2].metadata["thread"] = "x" * 300  # over limits.max_thread_bytes (128)
    with pytest.raises(RankingError) as err:
        MemrankCompressor(target=target).compress_documents(docs, QUERY)
    assert "candidates[2].thread" in err.value.fields
    assert any("document 2 (id 't2')" in note for note in err.value.__notes__)


def test_documents_without_ids_get_their_batch_index(target: str) -> None:
    docs = [Document(page_content=text, metadata=dict(meta)) for _, text, meta in CORPUS]
    got = MemrankCompressor(target=target, top_n=3, request={"referenceTime": REF}).compress_documents(docs, QUERY)
    assert len(got) == 3
    for d in got:
        index = int(d.metadata["memrank"]["id"].removeprefix("#"))
        assert docs[index].page_content == d.page_content


def test_top_n_zero_is_refused(target: str) -> None:
    with pytest.raises(ValueError, match="top_k must be a positive integer"):
        MemrankCompressor(target=target, top_n=0).compress_documents(_docs(), QUERY)


def test_no_documents_no_call() -> None:
    # An unreachable target: nothing is sent for an empty batch.
    assert MemrankCompressor(target="127.0.0.1:9", timeout=0.1).compress_documents([], QUERY) == []
