"""A framework reranker's score reaches the server as reranker_score: LlamaIndex's LLMRerank (a real
postprocessor, its LLM scripted), a Haystack ranker's Document.score, a LangChain rerank compressor's
metadata["relevance_score"] in a real DocumentCompressorPipeline; each against a live server."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest
from haystack import Document as HaystackDocument
from langchain_classic.retrievers.document_compressors import DocumentCompressorPipeline
from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor
from langchain_core.documents import Document as LangChainDocument
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.postprocessor import LLMRerank
from llama_index.core.schema import NodeWithScore, TextNode

from memrank.client import RankingClient
from memrank.integrations import MappingError
from memrank.integrations.haystack import MemrankRanker
from memrank.integrations.langchain import MemrankCompressor
from memrank.integrations.llamaindex import MemrankPostprocessor
from tests.frameworks.conftest import CORPUS, QUERY, REF, candidate


def _logistic_z(scores: Sequence[float]) -> list[float]:
    """The reranker signal's formula written out: population mean and spread, then 1 / (1 + e^-z)."""
    mean = sum(scores) / len(scores)
    std = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    return [1 / (1 + math.exp(-(s - mean) / std)) for s in scores]


def _reranker_raw(explanation: dict[str, Any]) -> float:
    return float(explanation["signals"]["reranker"]["raw"])


class _Grader(CustomLLM):
    """An LLM whose answer is written in advance (LLMRerank's "Doc: i, Relevance: r" lines)."""

    answer: str = ""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata()

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self.answer)

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError


def test_llamaindex_llm_rerank_grades_are_sent_as_reranker_scores(target: str, client: RankingClient) -> None:
    nodes = [NodeWithScore(node=TextNode(text=text, id_=ident, metadata=dict(meta)), score=0.5)
             for ident, text, meta in CORPUS[:6]]
    # The grader keeps documents 3, 1 and 6 (t2, t0, t5) with relevance 9, 4 and 2 (a 1-10 grade).
    rerank = LLMRerank(llm=_Grader(answer="Doc: 3, Relevance: 9\nDoc: 1, Relevance: 4\nDoc: 6, Relevance: 2"),
                       top_n=3, choice_batch_size=10)
    graded = rerank.postprocess_nodes(nodes, query_str=QUERY)
    assert [(n.node.node_id, n.score) for n in graded] == [("t2", 9.0), ("t0", 4.0), ("t5", 2.0)]
    post = MemrankPostprocessor(target=target, reranked=True, profile="with-reranker",
                                request={"referenceTime": REF})
    got = {n.node.node_id: n.node.metadata["memrank"] for n in post.postprocess_nodes(graded, query_str=QUERY)}
    want = dict(zip(["t2", "t0", "t5"], _logistic_z([9.0, 4.0, 2.0]), strict=True))
    assert {i: _reranker_raw(e) for i, e in got.items()} == pytest.approx(want, abs=1e-12)
    # LLMRerank keeps no retriever score: the retrieval_score is the nodes' order, (n - i) / n.
    assert [got[i]["retrieval_score"] for i in ("t2", "t0", "t5")] == pytest.approx([1, 2 / 3, 1 / 3])
    # The same candidates written out by hand get the same answer.
    cands = [dict(candidate(i, r, dict(CORPUS[int(i[1:])][2]), CORPUS[int(i[1:])][1]), rerankerScore=s)
             for i, r, s in (("t2", 1.0, 9.0), ("t0", 2 / 3, 4.0), ("t5", 1 / 3, 2.0))]
    resp = client.rank({"query": QUERY, "referenceTime": REF, "candidates": cands, "relevanceThreshold": 0.0,
                        "profile": "with-reranker"})
    assert {m.id: m.score for m in resp.selected} == pytest.approx({i: e["score"] for i, e in got.items()})


def test_llamaindex_keeps_the_retrieval_score_a_reranker_kept(target: str) -> None:
    nodes = [NodeWithScore(node=TextNode(text=t, id_=i, metadata={**m, "retrieval_score": r}), score=s)
             for (i, t, m), r, s in zip(CORPUS[:3], (0.9, 0.2, 0.6), (-3.0, 1.5, 6.0), strict=True)]
    post = MemrankPostprocessor(target=target, reranked=True, profile="with-reranker", scores="unit",
                                request={"referenceTime": REF})
    got = {n.node.node_id: n.node.metadata["memrank"] for n in post.postprocess_nodes(nodes, query_str=QUERY)}
    assert {i: b["retrieval_score"] for i, b in got.items()} == pytest.approx({"t0": 0.9, "t1": 0.2, "t2": 0.6})


def test_haystack_ranker_scores_are_sent_as_reranker_scores(target: str) -> None:
    # What a Haystack ranker hands on: the documents, their score replaced by the ranker's logit.
    docs = [HaystackDocument(id=i, content=t, meta=dict(m), score=s)
            for (i, t, m), s in zip(CORPUS[:4], (-7.5, 2.25, 8.0, -1.0), strict=True)]
    ranker = MemrankRanker(target=target, reranked=True, profile="with-reranker", request={"referenceTime": REF})
    out = ranker.run(query=QUERY, documents=docs)["documents"]
    want = dict(zip(["t0", "t1", "t2", "t3"], _logistic_z([-7.5, 2.25, 8.0, -1.0]), strict=True))
    assert {d.id: _reranker_raw(d.meta["memrank"]) for d in out} == pytest.approx(want, abs=1e-12)
    assert MemrankRanker.from_dict(ranker.to_dict()).reranked is True
    # Not reranked: Document.score is the retriever's, and no candidate carries a reranker score.
    plain = MemrankRanker(target=target, profile="with-reranker", request={"referenceTime": REF})
    reasons = [d.meta["memrank"]["signals"]["reranker"]["reasons"]
               for d in plain.run(query=QUERY, documents=docs)["documents"]]
    assert reasons and all(r[0] == "no reranker_score in the batch: 0" and "weight 0 (profile" in r[1]
                           for r in reasons)  # with-reranker's weight goes to the other signals


class _RelevanceScorer(BaseDocumentCompressor):
    """A rerank compressor as LangChain's Cohere/Jina/Flashrank ones behave: copies of the documents, best first,
    with the score in metadata["relevance_score"] (here the share of the query's words a document has)."""

    def compress_documents(self, documents: Sequence[LangChainDocument], query: str,
                           callbacks: Callbacks | None = None) -> Sequence[LangChainDocument]:
        words = set(query.lower().replace("?", "").split())
        scored = [(len(words & set(d.page_content.lower().replace(",", "").split())) / len(words), d)
                  for d in documents]
        return [LangChainDocument(page_content=d.page_content, id=d.id, metadata={**d.metadata, "relevance_score": s})
                for s, d in sorted(scored, key=lambda x: -x[0])]


def test_langchain_rerank_compressor_scores_are_sent_as_reranker_scores(target: str) -> None:
    docs = [LangChainDocument(page_content=t, id=i, metadata=dict(m)) for i, t, m in CORPUS]
    memrank = MemrankCompressor(target=target, profile="with-reranker", top_n=10, request={"referenceTime": REF})
    out = DocumentCompressorPipeline(transformers=[_RelevanceScorer(), memrank]).compress_documents(docs, QUERY)
    sent = {d.id: float(d.metadata["relevance_score"]) for d in out}
    ids = list(sent)
    want = dict(zip(ids, _logistic_z([sent[i] for i in ids]), strict=True))
    assert {d.id: _reranker_raw(d.metadata["memrank"]) for d in out} == pytest.approx(want, abs=1e-12)


def test_a_reranker_score_that_is_not_a_number_names_the_document_and_the_key(target: str) -> None:
    docs = [LangChainDocument(page_content="a", id="a", metadata={"relevance_score": 0.5}),
            LangChainDocument(page_content="b", id="b", metadata={"relevance_score": "high"})]
    with pytest.raises(MappingError, match=r"document 1 \(id 'b'\): metadata\['relevance_score'\]: a reranker score "
                                           r"must be a finite number, got 'high'"):
        MemrankCompressor(target=target).compress_documents(docs, QUERY)
    nodes = [NodeWithScore(node=TextNode(text="a", id_="a"), score=float("nan"))]
    with pytest.raises(MappingError, match=r"NodeWithScore.score: a reranker score must be a finite number"):
        MemrankPostprocessor(target=target, reranked=True).postprocess_nodes(nodes, query_str=QUERY)
