"""LlamaIndex: memrank as a node postprocessor (``memrank[llamaindex]``, llama-index-core only).

    from memrank.integrations.llamaindex import MemrankPostprocessor

    memrank = MemrankPostprocessor(target="localhost:50051", top_n=5)
    nodes = index.as_retriever(similarity_top_k=50).retrieve("what did Caroline decide?")
    nodes = memrank.postprocess_nodes(nodes, query_str="what did Caroline decide?")

The nodes come back in placement order with memrank's score as
``NodeWithScore.score``; each is a copy of its node whose ``metadata["memrank"]``
holds the rank, score, breakdown and reasons (the key is added to the node's
``excluded_llm_metadata_keys`` and ``excluded_embed_metadata_keys``, so the
explanation never reaches a prompt or an embedding). The retriever's score is
``NodeWithScore.score``; the rest of the mapping is ``memrank.integrations.mapping``'s.

After a reranking postprocessor (``SentenceTransformerRerank``, ``LLMRerank``,
``CohereRerank``, ...), ``NodeWithScore.score`` is the reranker's:
``MemrankPostprocessor(reranked=True)`` sends it as each candidate's
``reranker_score`` (weighed by the ``with-reranker`` profile), and the
retriever's score from ``metadata["retrieval_score"]``, where
``SentenceTransformerRerank(keep_retrieval_score=True)`` keeps it (without it,
the nodes' order gives the retrieval_score, ``scores="auto"``).
"""

from __future__ import annotations

try:
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle
except ImportError as err:  # pragma: no cover - depends on the installation
    raise ImportError("memrank.integrations.llamaindex needs llama-index-core: "
                      "pip install 'memrank-sidecar[llamaindex]'") \
        from err

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.integrations.mapping import Item, build_request, selections
from memrank.integrations.options import AdapterOptions

KEPT_RETRIEVAL_SCORE = "retrieval_score"  # where SentenceTransformerRerank(keep_retrieval_score=True) keeps it
__all__ = ["MemrankPostprocessor"]


class MemrankPostprocessor(AdapterOptions, BaseNodePostprocessor):
    """Ranks, deduplicates and budgets retrieved nodes through a memrank sidecar.

    ``target`` is the sidecar's ``host:port`` (or give ``client`` / ``async_client``,
    e.g. for TLS); ``top_n`` caps the selection (``budget.max_items``; None: memrank's
    selection alone decides); ``request`` adds RankRequest fields in protobuf JSON
    form (``referenceTime``, ``placement``, ``budget.maxTokens``, ``weightOverrides``, ...).
    No query bundle: ranked without a query (memrank's lexical signals are then 0).
    ``reranked``: the nodes come from a reranking postprocessor (see the module's docstring).
    """

    reranked: bool = False

    @classmethod
    def class_name(cls) -> str:
        return "MemrankPostprocessor"

    def _request(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None) -> pb.RankRequest:
        if self.reranked:  # NodeWithScore.score is the reranker's; the retriever's, when kept, in metadata
            items = [Item(n.node.get_content(metadata_mode=MetadataMode.NONE), n.node.metadata, n.node.node_id,
                          n.node.metadata.get(KEPT_RETRIEVAL_SCORE), n.node.embedding, reranker=n.score)
                     for n in nodes]
            field = f"metadata[{KEPT_RETRIEVAL_SCORE!r}]"
        else:
            items = [Item(n.node.get_content(metadata_mode=MetadataMode.NONE), n.node.metadata, n.node.node_id,
                          n.score, n.node.embedding) for n in nodes]
            field = "NodeWithScore.score"
        return build_request(query_bundle.query_str if query_bundle is not None else None, items, keys=self.keys,
                             scores=self.scores, score_field=field, top_k=self.top_n, profile=self.profile,
                             request=self.request, reranker_field="NodeWithScore.score")

    def _nodes(self, nodes: list[NodeWithScore], request: pb.RankRequest,
               response: pb.RankResponse) -> list[NodeWithScore]:
        key = self.keys.output
        out = []
        for s in selections(request, response):
            node = nodes[s.index].node.model_copy()
            node.metadata = {**node.metadata, key: s.explanation}
            for excluded in ("excluded_llm_metadata_keys", "excluded_embed_metadata_keys"):
                keys = list(getattr(node, excluded))
                setattr(node, excluded, keys if key in keys else [*keys, key])
            out.append(NodeWithScore(node=node, score=s.score))
        return out

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        if not nodes:
            return []
        request = self._request(nodes, query_bundle)
        return self._nodes(nodes, request, self._connection.rank(request))

    async def _apostprocess_nodes(self, nodes: list[NodeWithScore],
                                  query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        if not nodes:
            return []
        request = self._request(nodes, query_bundle)
        return self._nodes(nodes, request, await self._connection.arank(request))
