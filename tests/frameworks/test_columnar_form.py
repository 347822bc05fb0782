"""The adapters send documents as ``RankRequest.columns`` with packed embeddings, and the server answers them
byte for byte as it answers the same documents sent per candidate: the old form, written out here by hand from
the mapping's table (``memrank.integrations.mapping``), one ``pb.Candidate`` per document."""

from __future__ import annotations

import calendar
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

import numpy as np
import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from haystack import Document as HaystackDocument
from langchain_core.documents import Document as LangChainDocument
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.client import RankingClient
from memrank.integrations.haystack import MemrankRanker
from memrank.integrations.langchain import MemrankCompressor
from memrank.integrations.llamaindex import MemrankPostprocessor
from memrank.integrations.mapping import Item, build_request
from tests.frameworks.conftest import QUERY, REF

DIM = 8
_RNG = np.random.default_rng(45)
# Two near-duplicates (rows 0 and 1) give diversity something to drop.
_VECTORS = _RNG.standard_normal((9, DIM))
_VECTORS[1] = _VECTORS[0] + 0.01


def _at(*when: int, nanos: int = 0) -> Timestamp:
    """A UTC time as the wire carries it, from its calendar fields (the standard library's arithmetic)."""
    return Timestamp(seconds=calendar.timegm((*when, 0, 0, 0)[:6]), nanos=nanos)


@dataclass(frozen=True)
class Doc:
    """A document as a framework holds it, and the Candidate the mapping's table says it becomes."""

    ident: str | None
    content: str | None
    score: float | None
    meta: dict[str, Any]
    embedding: Any  # as the framework or metadata gives it; None: none
    expected: dict[str, Any] = field(default_factory=dict)  # the Candidate's fields other than the embedding


DOCS = [
    Doc("t0", "Caroline a décidé : Lisbonne en juillet, le voyage est réservé ✈️", 0.91,
        {"created_at": "2026-05-01T10:02:00.123456+02:00", "importance": "0.9", "kind": "decision",
         "thread": "s1", "position": 2, "speaker": "Caroline", "memory_source": "user_provided", "safety": "SAFE"},
        _VECTORS[0].tolist(),
        {"id": "t0", "created_at": _at(2026, 5, 1, 8, 2, nanos=123456000), "importance": 0.9, "kind": "decision",
         "thread": "s1", "position": 2, "speaker": "Caroline", "source": pb.SOURCE_USER_PROVIDED,
         "safety": pb.SAFETY_STATUS_SAFE}),
    Doc("t1", "Caroline decided on Lisbon, the trip is booked for July.", 0.9,
        {"created_at": datetime(2026, 5, 1, 10, 3, 0, 500000), "thread": 7, "position": "3", "token_count": 12.0,
         "access_count": "4", "layer": "episodic", "speaker": "Caroline"},
        np.asarray(_VECTORS[1]),
        {"id": "t1", "created_at": _at(2026, 5, 1, 10, 3, nanos=500000000), "thread": "7", "position": 3,
         "token_count": 12, "access_count": 4, "layer": "episodic", "speaker": "Caroline"}),
    Doc("t2", None, 0.7, {}, None, {"id": "t2"}),  # nothing but an id and a score: every other field unset
    Doc("t3", "卡罗琳说她七月去里斯本旅行，Lisbon trip。", 0.4,
        {"created_at": date(2026, 4, 30), "valid_to": 1788000000.25, "provenance": "chat:42", "safety": 2,
         "event_time": None},
        _VECTORS[3].astype(np.float32),
        {"id": "t3", "created_at": _at(2026, 4, 30), "valid_to": Timestamp(seconds=1788000000, nanos=250000000),
         "provenance": "chat:42", "safety": pb.SAFETY_STATUS_REVIEW_NEEDED}),
    Doc("t4", "مرحبا Caroline 👋 — the trip to Lisbon", 0.2,
        {"last_accessed_at": "2026-05-20T00:00:00Z", "event_time": 1777000000, "ingested_at": "2026-05-02T00:00:00",
         "valid_from": datetime(2026, 1, 1, tzinfo=UTC), "importance": 0.1, "kind": "fact"},
        [round(float(v) * 4) for v in _VECTORS[4]],
        {"id": "t4", "last_accessed_at": _at(2026, 5, 20), "event_time": Timestamp(seconds=1777000000),
         "ingested_at": _at(2026, 5, 2), "valid_from": _at(2026, 1, 1), "importance": 0.1, "kind": "fact"}),
    Doc(None, "Melanie: Porto is cheaper than Lisbon, but Lisbon it is then.", 0.55,
        {"id": 55, "speaker": "Melanie", "thread": "s1", "position": 5}, _VECTORS[5].tolist(),
        {"id": "55", "speaker": "Melanie", "thread": "s1", "position": 5}),
    Doc(None, "Grüße aus der Straße — ẞ, ﬁ, Ω: Unicode that is not ASCII.", 0.33,
        {"memory_source": "SOURCE_CHAT", "created_at": 1777593600}, None,
        {"id": "#6", "source": pb.SOURCE_CHAT, "created_at": _at(2026, 5, 1)}),
    Doc("t7", "Melanie: We went camping by the river, the trip was lovely.", 0.6,
        {"importance": 0, "access_count": 0, "token_count": 0, "position": 0}, _VECTORS[7].tolist(),
        {"id": "t7", "importance": 0.0, "access_count": 0, "token_count": 0, "position": 0}),
    Doc("t8", "", 0.05, {"layer": "semantic"}, _VECTORS[8].tolist(), {"id": "t8", "layer": "semantic"}),
]


def _row(d: Doc) -> list[float]:
    """The embedding as float32 values, as Candidate.embedding (repeated float) holds it."""
    return [] if d.embedding is None else np.asarray(d.embedding, dtype=np.float32).tolist()


def _per_candidate(docs: list[Doc], scores: list[float], **fields: Any) -> pb.RankRequest:
    """The request in the per-candidate form, each Candidate written from the table's expectations."""
    cands = [pb.Candidate(content=d.content or "", retrieval_score=s, embedding=_row(d), **d.expected)
             for d, s in zip(docs, scores, strict=True)]
    return pb.RankRequest(query=QUERY, reference_time=_at(2026, 6, 1, 12), request_id="same", candidates=cands,
                          **fields)


def _items(docs: list[Doc], *, scored: bool = True) -> list[Item]:
    return [Item(d.content, d.meta, d.ident, d.score if scored else None, d.embedding) for d in docs]


@pytest.mark.parametrize("extra", [
    {},
    {"placement": "PLACEMENT_EDGES", "explain": "EXPLAIN_LEVEL_FULL", "budget": {"maxItems": 4, "maxTokens": 60}},
])
def test_columns_and_per_candidate_give_byte_identical_responses(client: RankingClient,
                                                                 extra: dict[str, Any]) -> None:
    request = {"referenceTime": REF, "requestId": "same", **extra}
    columnar = build_request(QUERY, _items(DOCS), scores="unit", request=request)
    assert columnar.HasField("columns") and not columnar.candidates
    assert columnar.embedding_dim == DIM
    old = _per_candidate(DOCS, [d.score or 0.0 for d in DOCS])
    if extra:
        old.placement, old.explain = pb.PLACEMENT_EDGES, pb.EXPLAIN_LEVEL_FULL
        old.budget.max_items, old.budget.max_tokens = 4, 60
    got, want = client.rank(columnar), client.rank(old)
    assert got.SerializeToString() == want.SerializeToString()
    assert len(got.selected) >= 2


def test_order_scores_and_their_zero_threshold_alike(client: RankingClient) -> None:
    n = len(DOCS)
    columnar = build_request(QUERY, _items(DOCS, scored=False), request={"referenceTime": REF, "requestId": "same"})
    old = _per_candidate(DOCS, [(n - i) / n for i in range(n)], relevance_threshold=0.0)
    assert client.rank(columnar).SerializeToString() == client.rank(old).SerializeToString()


# Each adapter's own documents for the table's rows that every framework can hold as they are (an id of its
# own, text content, embeddings as lists).
_SHARED = [d for d in DOCS if d.ident is not None and d.content is not None]


_OPTIONS: dict[str, Any] = {"scores": "unit", "request": {"referenceTime": REF, "requestId": "same"}}


def _langchain(client: RankingClient, docs: list[Doc]) -> tuple[pb.RankRequest, list[tuple[str, float]]]:
    """The request MemrankCompressor sends, and its answer through its public method: (id, score) in order."""
    compressor = MemrankCompressor(client=client, **_OPTIONS)
    documents = [LangChainDocument(page_content=d.content or "", id=d.ident,
                                   metadata={**d.meta, "score": d.score, "embedding": d.embedding}) for d in docs]
    got = compressor.compress_documents(documents, QUERY)
    return compressor._request(documents, QUERY), [(d.id or "", d.metadata["memrank"]["score"]) for d in got]


def _llamaindex(client: RankingClient, docs: list[Doc]) -> tuple[pb.RankRequest, list[tuple[str, float]]]:
    post = MemrankPostprocessor(client=client, **_OPTIONS)
    nodes = [NodeWithScore(node=TextNode(text=d.content, id_=d.ident, metadata=d.meta, embedding=_row(d) or None),
                           score=d.score) for d in docs]
    got = post.postprocess_nodes(nodes, query_str=QUERY)
    return post._request(nodes, QueryBundle(QUERY)), [(n.node.node_id, n.score or 0.0) for n in got]


def _haystack(client: RankingClient, docs: list[Doc]) -> tuple[pb.RankRequest, list[tuple[str, float]]]:
    ranker = MemrankRanker(client=client, **_OPTIONS)
    documents = [HaystackDocument(id=d.ident or "", content=d.content, meta=d.meta, score=d.score,
                                  embedding=_row(d) or None) for d in docs]
    got = ranker.run(QUERY, documents)["documents"]
    return ranker._request(QUERY, documents, None), [(d.id, d.score or 0.0) for d in got]


@pytest.mark.parametrize("adapter", [_langchain, _llamaindex, _haystack], ids=["langchain", "llamaindex", "haystack"])
def test_each_adapter_sends_columns_answered_as_per_candidate(client: RankingClient, adapter: Any) -> None:
    sent, got = adapter(client, _SHARED)
    assert sent.HasField("columns") and not sent.candidates and sent.embedding_dim == DIM
    old = client.rank(_per_candidate(_SHARED, [d.score or 0.0 for d in _SHARED]))
    assert client.rank(sent).SerializeToString() == old.SerializeToString()
    assert got == [(m.id, m.score) for m in old.selected]
