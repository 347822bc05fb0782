"""LangChain: memrank as a document compressor (``memrank[langchain]``, langchain-core only).

    from langchain_classic.retrievers import ContextualCompressionRetriever
    from memrank.integrations.langchain import MemrankCompressor

    retriever = ContextualCompressionRetriever(
        base_compressor=MemrankCompressor(target="localhost:50051", top_n=5),
        base_retriever=vector_store.as_retriever(search_kwargs={"k": 50}))
    docs = retriever.invoke("what did Caroline decide about the trip?")

The documents come back in placement order, each a copy carrying its rank,
score, breakdown and reasons in ``metadata["memrank"]``. The mapping of
metadata to candidate fields is ``memrank.integrations.mapping``'s; a LangChain
``Document`` has no score of its own, so the retriever's score is read from
``metadata[keys.score]`` (``"score"``), and with none at all the retriever's
order gives it (``scores="auto"``).

A rerank compressor that ran first (``CohereRerank``, ``JinaRerank``,
``FlashrankRerank``, ... in a ``DocumentCompressorPipeline``) leaves its score
in ``metadata["relevance_score"]``: it is sent as each candidate's
``reranker_score`` (``keys.reranker_score``; weighed by the ``with-reranker``
profile).
"""

from __future__ import annotations

from collections.abc import Sequence

try:
    from langchain_core.callbacks import Callbacks
    from langchain_core.documents import BaseDocumentCompressor, Document
except ImportError as err:  # pragma: no cover - depends on the installation
    raise ImportError("memrank.integrations.langchain needs langchain-core: pip install 'memrank-sidecar[langchain]'") \
        from err

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.integrations.mapping import Item, build_request, selections
from memrank.integrations.options import AdapterOptions

__all__ = ["MemrankCompressor"]


class MemrankCompressor(AdapterOptions, BaseDocumentCompressor):
    """Ranks, deduplicates and budgets retrieved documents through a memrank sidecar.

    ``target`` is the sidecar's ``host:port`` (or give ``client`` / ``async_client``,
    e.g. for TLS); ``top_n`` caps the selection (``budget.max_items``; None: memrank's
    selection alone decides); ``request`` adds RankRequest fields in protobuf JSON
    form (``referenceTime``, ``placement``, ``budget.maxTokens``, ``weightOverrides``, ...).
    """

    def _request(self, documents: Sequence[Document], query: str) -> pb.RankRequest:
        key = self.keys.score
        items = [Item(d.page_content, d.metadata, d.id, d.metadata.get(key) if key is not None else None)
                 for d in documents]
        return build_request(query, items, keys=self.keys, scores=self.scores, top_k=self.top_n,
                             score_field=f"metadata[{key!r}]", profile=self.profile, request=self.request)

    def _documents(self, documents: Sequence[Document], request: pb.RankRequest,
                   response: pb.RankResponse) -> list[Document]:
        return [documents[s.index].model_copy(
                    update={"metadata": {**documents[s.index].metadata, self.keys.output: s.explanation}})
                for s in selections(request, response)]

    def compress_documents(self, documents: Sequence[Document], query: str,
                           callbacks: Callbacks | None = None) -> Sequence[Document]:
        """The documents memrank selects for ``query``, in placement order."""
        if not documents:
            return []
        request = self._request(documents, query)
        return self._documents(documents, request, self._connection.rank(request))

    async def acompress_documents(self, documents: Sequence[Document], query: str,
                                  callbacks: Callbacks | None = None) -> Sequence[Document]:
        """As compress_documents, over grpc.aio."""
        if not documents:
            return []
        request = self._request(documents, query)
        return self._documents(documents, request, await self._connection.arank(request))
