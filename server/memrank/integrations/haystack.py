"""Haystack 2.x: memrank as a ranker component (``memrank[haystack]``).

    from haystack import Pipeline
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from memrank.integrations.haystack import MemrankRanker

    pipe = Pipeline()
    pipe.add_component("retriever", InMemoryBM25Retriever(document_store, top_k=50))
    pipe.add_component("memrank", MemrankRanker(target="localhost:50051", top_k=5))
    pipe.connect("retriever.documents", "memrank.documents")
    q = "what did Caroline decide?"
    docs = pipe.run({"retriever": {"query": q}, "memrank": {"query": q}})["memrank"]["documents"]

The documents come back in placement order, each a copy whose ``score`` is
memrank's and whose ``meta["memrank"]`` holds the rank, score, breakdown and
reasons. The retriever's score is ``Document.score`` (raw BM25 by default:
``scores="auto"`` min-maxes it within the batch); the rest of the mapping is
``memrank.integrations.mapping``'s.

After a Haystack ranker (``TransformersSimilarityRanker``,
``SentenceTransformersSimilarityRanker``, ...), ``Document.score`` is the
ranker's: ``MemrankRanker(reranked=True)`` sends it as each candidate's
``reranker_score`` (weighed by the ``with-reranker`` profile). The rankers
keep no retriever score, so the retrieval_score then follows the documents'
order (``scores="auto"`` with no score). Build the ranker with
``scale_score=False``: its logits, not their sigmoid (the ``reranker`` signal
is unchanged by an affine rescaling, not by a sigmoid).
"""

# No `from __future__ import annotations`: older Haystack (2.12 does) reads run()'s annotations as they are
# to type its sockets, and a string 'list[Document]' matches no retriever's output.
from dataclasses import replace
from typing import Any

try:
    from haystack import Document, component, default_from_dict, default_to_dict
    from haystack.utils import Secret, deserialize_secrets_inplace
except ImportError as err:  # pragma: no cover - depends on the installation
    raise ImportError("memrank.integrations.haystack needs haystack-ai: pip install 'memrank-sidecar[haystack]'") \
        from err

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.client.aio import AsyncRankingClient
from memrank.client.sync import RankingClient
from memrank.integrations.connection import Connection
from memrank.integrations.mapping import SCORE_MODES, Item, MetadataKeys, build_request, selections

__all__ = ["MemrankRanker"]


@component
class MemrankRanker:
    """Ranks, deduplicates and budgets documents through a memrank sidecar.

    ``target`` is the sidecar's ``host:port`` (or give ``client`` / ``async_client``,
    e.g. for TLS; such a ranker cannot be serialised); ``top_k`` caps the selection
    (``budget.max_items``; None: memrank's selection alone decides); ``request``
    adds RankRequest fields in protobuf JSON form (``referenceTime``, ``placement``,
    ``budget.maxTokens``, ...); ``token`` is a bearer token (a Haystack ``Secret``).
    """

    def __init__(self, target: str | None = None, *, top_k: int | None = None, profile: str | None = None,
                 scores: str = "auto", keys: MetadataKeys | dict[str, Any] | None = None,
                 request: dict[str, Any] | None = None, timeout: float = 5.0, token: Secret | None = None,
                 client: RankingClient | None = None, async_client: AsyncRankingClient | None = None,
                 reranked: bool = False) -> None:
        if scores not in SCORE_MODES:
            raise ValueError(f"scores must be one of {list(SCORE_MODES)}, got {scores!r}")
        self.target = target
        self.top_k = top_k
        self.profile = profile
        self.scores = scores
        self.reranked = reranked
        self.keys = MetadataKeys.of(keys)
        self.request = dict(request or {})
        self.timeout = timeout
        self.token = token
        self._given_client = client is not None or async_client is not None
        self._connection = Connection(target, client, async_client, timeout=timeout,
                                      token=token.resolve_value() if token is not None else None)

    def to_dict(self) -> dict[str, Any]:
        """The component as a dict (a ranker given a client object has no dict form)."""
        if self._given_client:
            raise TypeError("a MemrankRanker built with a client object cannot be serialised; build it with target")
        return default_to_dict(self, target=self.target, top_k=self.top_k, profile=self.profile, scores=self.scores,
                               keys=self.keys.as_dict(), request=self.request, timeout=self.timeout,
                               token=self.token.to_dict() if self.token is not None else None,
                               reranked=self.reranked)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "MemrankRanker":
        """The component from its dict form."""
        deserialize_secrets_inplace(data["init_parameters"], keys=["token"])
        ranker: MemrankRanker = default_from_dict(cls, data)
        return ranker

    def _request(self, query: str, documents: list[Document], top_k: int | None) -> pb.RankRequest:
        if self.reranked:  # Document.score is the ranker's; the retriever's is gone
            items = [Item(d.content, d.meta, d.id, None, d.embedding, reranker=d.score) for d in documents]
        else:
            items = [Item(d.content, d.meta, d.id, d.score, d.embedding) for d in documents]
        return build_request(query, items, keys=self.keys, scores=self.scores, score_field="Document.score",
                             top_k=self.top_k if top_k is None else top_k, profile=self.profile,
                             request=self.request, reranker_field="Document.score")

    def _documents(self, documents: list[Document], request: pb.RankRequest,
                   response: pb.RankResponse) -> dict[str, list[Document]]:
        return {"documents": [replace(documents[s.index], score=s.score,
                                      meta={**documents[s.index].meta, self.keys.output: s.explanation})
                              for s in selections(request, response)]}

    @component.output_types(documents=list[Document])
    def run(self, query: str, documents: list[Document], top_k: int | None = None) -> dict[str, list[Document]]:
        """The documents memrank selects for ``query``, in placement order (``top_k`` overrides the init's)."""
        if not documents:
            return {"documents": []}
        request = self._request(query, documents, top_k)
        return self._documents(documents, request, self._connection.rank(request))

    @component.output_types(documents=list[Document])
    async def run_async(self, query: str, documents: list[Document],
                        top_k: int | None = None) -> dict[str, list[Document]]:
        """As run, over grpc.aio (AsyncPipeline)."""
        if not documents:
            return {"documents": []}
        request = self._request(query, documents, top_k)
        return self._documents(documents, request, await self._connection.arank(request))

    def close(self) -> None:
        """Close the channel opened for ``target`` (a given client is left open)."""
        self._connection.close()
