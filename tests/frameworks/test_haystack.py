"""Haystack 2.x: a Pipeline of InMemoryBM25Retriever -> MemrankRanker, against a live server."""

from __future__ import annotations

import asyncio
import math

import pytest
from haystack import AsyncPipeline, Document, Pipeline
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.core.errors import PipelineRuntimeError
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.utils import Secret

from memrank.client import RankingClient
from memrank.integrations import MappingError
from memrank.integrations.haystack import MemrankRanker
from tests.frameworks.conftest import CORPUS, QUERY, REF, candidate


def _store(meta: dict[str, dict[str, object]] | None = None) -> InMemoryDocumentStore:
    store = InMemoryDocumentStore()
    store.write_documents([Document(id=ident, content=text, meta={**m, **(meta or {}).get(ident, {})})
                           for ident, text, m in CORPUS])
    return store


def _pipeline(store: InMemoryDocumentStore, ranker: MemrankRanker, *, top_k: int = 8,
              scale_score: bool = False) -> Pipeline:
    pipe = Pipeline()
    pipe.add_component("retriever", InMemoryBM25Retriever(store, top_k=top_k, scale_score=scale_score))
    pipe.add_component("memrank", ranker)
    pipe.connect("retriever.documents", "memrank.documents")
    return pipe


def _minmax(values: list[float]) -> list[float]:
    lo, hi = min(values), max(values)
    return [1.0] * len(values) if hi == lo else [(v - lo) / (hi - lo) for v in values]


def _run(pipe: Pipeline, top_k: int | None = None) -> list[Document]:
    ranker_in: dict[str, object] = {"query": QUERY} | ({"top_k": top_k} if top_k is not None else {})
    docs: list[Document] = pipe.run({"retriever": {"query": QUERY}, "memrank": ranker_in})["memrank"]["documents"]
    return docs


def test_bm25_pipeline_min_maxes_and_follows_the_servers_placement(target: str, client: RankingClient) -> None:
    store = _store()
    hits = InMemoryBM25Retriever(store, top_k=8).run(query=QUERY)["documents"]
    raw = [float(d.score or 0.0) for d in hits]
    assert max(raw) > 1.0, "raw BM25: the batch needs the min-max rule"
    expected = dict(zip([d.id for d in hits], _minmax(raw), strict=True))
    got = _run(_pipeline(store, MemrankRanker(target=target, top_k=4, request={"referenceTime": REF})))
    assert len(got) == 4
    cands = [candidate(d.id, expected[d.id], {k: v for k, v in d.meta.items()}, d.content or "") for d in hits]
    resp = client.rank({"query": QUERY, "referenceTime": REF, "candidates": cands, "relevanceThreshold": 0.0,
                        "budget": {"maxItems": 4}})
    assert [d.id for d in got] == [m.id for m in resp.selected]
    for d, m in zip(got, resp.selected, strict=True):
        info = d.meta["memrank"]
        assert d.score == pytest.approx(m.score, abs=1e-12)
        assert info["retrieval_score"] == pytest.approx(expected[d.id], abs=1e-12)
        total = sum(s["contribution"] for s in info["signals"].values()) + info["blend_term"]
        assert math.isclose(total, info["combined_score"], abs_tol=1e-9)
        assert d.content == next(h.content for h in hits if h.id == d.id)


def test_scaled_scores_are_sent_as_they_are(target: str) -> None:
    store = _store()
    hits = InMemoryBM25Retriever(store, top_k=8, scale_score=True).run(query=QUERY)["documents"]
    sent = {d.id: d.score for d in hits}
    assert all(s is not None and 0.0 <= s <= 1.0 for s in sent.values())
    got = _run(_pipeline(store, MemrankRanker(target=target, request={"referenceTime": REF}), scale_score=True))
    assert got
    for d in got:
        assert d.meta["memrank"]["retrieval_score"] == pytest.approx(sent[d.id], abs=1e-12)


def test_run_top_k_overrides_the_init_top_k(target: str) -> None:
    pipe = _pipeline(_store(), MemrankRanker(target=target, top_k=5, request={"referenceTime": REF}))
    assert len(_run(pipe)) == 5
    two = _run(pipe, top_k=2)
    assert [d.meta["memrank"]["rank"] for d in two] == [1, 2]
    assert [d.id for d in two] == [d.id for d in _run(pipe)][:2]


def test_edges_placement(target: str) -> None:
    ranker = MemrankRanker(target=target, top_k=5, request={"referenceTime": REF, "placement": "PLACEMENT_EDGES"})
    got = _run(_pipeline(_store(), ranker))
    # Rank 1 first, rank 2 last, then 3, 4, ... alternating inward.
    assert [d.meta["memrank"]["rank"] for d in got] == [1, 3, 5, 4, 2]


def test_malformed_metadata_names_the_document_and_the_key(target: str) -> None:
    store = _store({"t2": {"memory_source": "my notebook"}})
    with pytest.raises(PipelineRuntimeError) as err:
        _run(_pipeline(store, MemrankRanker(target=target)))
    cause = err.value.__cause__
    assert isinstance(cause, MappingError)
    assert "'t2'" in cause.document and cause.key == "metadata['memory_source']"
    assert "user_provided" in cause.problem  # the accepted names are listed


def test_source_and_safety_names(target: str) -> None:
    store = _store({"t2": {"memory_source": "user_provided"}, "t3": {"safety": "SAFETY_STATUS_QUARANTINED"}})
    got = _run(_pipeline(store, MemrankRanker(target=target, request={"referenceTime": REF})))
    ids = [d.id for d in got]
    assert "t3" not in ids, "quarantined: dropped by the safety gate"
    assert "t2" in ids


def test_serialises_and_loads(target: str) -> None:
    pipe = _pipeline(_store(), MemrankRanker(target=target, top_k=3, request={"referenceTime": REF},
                                             token=Secret.from_env_var("MEMRANK_TEST_TOKEN", strict=False)))
    loaded = Pipeline.loads(pipe.dumps())
    ranker = loaded.get_component("memrank")
    assert isinstance(ranker, MemrankRanker)
    assert (ranker.target, ranker.top_k, ranker.request) == (target, 3, {"referenceTime": REF})
    assert [d.id for d in _run(loaded)] == [d.id for d in _run(pipe)]


def test_a_ranker_with_a_client_object_does_not_serialise(target: str) -> None:
    with RankingClient(target) as c, pytest.raises(TypeError, match="cannot be serialised"):
        MemrankRanker(client=c).to_dict()


def test_async_pipeline(target: str) -> None:
    store = _store()
    ranker = MemrankRanker(target=target, top_k=3, request={"referenceTime": REF})
    pipe = AsyncPipeline()
    pipe.add_component("retriever", InMemoryBM25Retriever(store, top_k=8))
    pipe.add_component("memrank", ranker)
    pipe.connect("retriever.documents", "memrank.documents")
    out = asyncio.run(pipe.run_async({"retriever": {"query": QUERY}, "memrank": {"query": QUERY}}))
    sync = _run(_pipeline(store, MemrankRanker(target=target, top_k=3, request={"referenceTime": REF})))
    assert [(d.id, d.score) for d in out["memrank"]["documents"]] == [(d.id, d.score) for d in sync]


def test_equal_scores_all_become_one(target: str) -> None:
    docs = [Document(id=ident, content=text, meta=m, score=7.5) for ident, text, m in CORPUS]
    got = MemrankRanker(target=target, request={"referenceTime": REF}).run(QUERY, docs)["documents"]
    assert got and all(d.meta["memrank"]["retrieval_score"] == 1.0 for d in got)


def test_duplicate_ids_are_refused(target: str) -> None:
    docs = [Document(id="same", content="a"), Document(id="same", content="b")]
    with pytest.raises(MappingError, match=r"document 1 \(id 'same'\): id: the same id as document 0"):
        MemrankRanker(target=target).run(QUERY, docs)
