"""The one mapping from a framework's documents to memrank candidates, shared by every adapter.

The table below is the mapping's documentation: ``candidate`` reads each of its rows (with ``values``' readers),
``documents`` holds what an adapter hands in, ``explanation`` what goes back.

Each adapter (``memrank.integrations.langchain``, ``.llamaindex``, ``.haystack``)
turns its documents into :class:`Item` s and calls :func:`build_request`, which
sends them as ``RankRequest.columns`` with the embeddings packed
(``embeddings_f32``), through the client's ``put_columns``; the response goes
back through :func:`selections`. What is read, from where:

==================  =========================================================  ===================================
Candidate field     read from                                                  when absent (or None)
==================  =========================================================  ===================================
id                  the framework's id (LangChain ``Document.id``, LlamaIndex  ``#<index>``, the document's 0-based
                    ``node_id``, Haystack ``Document.id``), else               place in the batch
                    ``metadata[keys.id]`` (a string or an integer)
retrieval_score     the retriever's score (LangChain ``metadata[keys.score]``,  see :func:`retrieval_scores`
                    LlamaIndex ``NodeWithScore.score``, Haystack
                    ``Document.score``), normalised as ``scores`` says
content             the text (LangChain ``page_content``, LlamaIndex            ``""``
                    ``get_content()``, Haystack ``content``)
created_at ...      ``metadata[keys.created_at]`` etc., the six timestamps:    unset (the server's default)
valid_to            a datetime (naive = UTC), a date (midnight UTC), epoch
                    seconds, or an ISO-8601 string
importance          ``metadata[keys.importance]``: a number in [0, 1]          unset: derived from the content
kind, layer,        strings                                                    unset
speaker,
provenance
thread              a string or an integer                                     unset
position            an integer in [0, 2^53]                                    unset
token_count,        an integer >= 0                                            unset (token_count: estimated)
access_count
source, safety      an enum name (``"user_provided"``, ``"SOURCE_CHAT"``, any  unset (SOURCE_UNKNOWN, SAFE)
                    case) or its number
reranker_score      a reranker's score, any finite number on any scale: the    unset (scored as the batch's
                    framework's score with ``reranked=True`` (LlamaIndex       lowest when others have one;
                    ``NodeWithScore.score`` after a reranking postprocessor,   with none, the ``reranker``
                    Haystack ``Document.score`` after a ranker), else          signal is 0)
                    ``metadata[keys.reranker_score]`` (``"relevance_score"``,
                    where LangChain's rerank compressors put it)
embedding           the framework's embedding (LlamaIndex ``node.embedding``,  unset (a row of zeros in the
                    Haystack ``Document.embedding``), else                     packed matrix, as the server reads
                    ``metadata[keys.embedding]``: a list or 1-D array of       a candidate without one)
                    finite numbers (finite as float32 too), one dimension
                    for the batch
==================  =========================================================  ===================================

Integers and numbers may also come as strings ("3", "0.7"); a float that is an
integer (3.0) counts as an integer. Any other metadata is not sent. A value of
the wrong type or out of range raises :class:`MappingError` naming the
document and the key; a key listed in ``MetadataKeys.required`` that is absent
raises it too. A key set to None in :class:`MetadataKeys` is not read.

The selected documents come back in placement order (the order of
``RankResponse.selected``), each carrying :func:`explanation` under
``metadata[keys.output]`` (default ``"memrank"``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.client.requests import fill, put_columns
from memrank.integrations.candidate import MAX_UINT32, CandidateReader
from memrank.integrations.documents import (
    SCORE_MODES,
    Item,
    MappingError,
    MetadataKeys,
    ScoreMode,
    doc_name,
    key_name,
)
from memrank.integrations.explanation import Selection, candidate_ids, explanation, selections
from memrank.integrations.values import real

__all__ = ["SCORE_MODES", "Item", "MappingError", "MetadataKeys", "ScoreMode", "Selection", "build_request",
           "document_id", "document_name", "explanation", "retrieval_scores", "selections"]


def document_id(i: int, item: Item, keys: MetadataKeys) -> str:
    """The id a document is sent under (see the module's table)."""
    if item.id:
        return str(item.id)
    if keys.id is not None and item.metadata.get(keys.id) is not None:
        value = item.metadata[keys.id]
        if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
            raise MappingError(doc_name(i, None), key_name(keys.id), f"an id must be a non-empty string or an integer, "
                                                               f"got {value!r}")
        return str(value)
    return f"#{i}"


def retrieval_scores(items: Sequence[Item], mode: str, score_field: str,
                     names: Sequence[str]) -> tuple[list[float], bool]:
    """Each document's retrieval_score, and whether the scores are relative to the batch.

    - ``"unit"``: the retriever's scores as they are; each must be a number in [0, 1].
    - ``"minmax"``: ``(s - min) / (max - min)`` within the batch (every score 1.0 when all are equal).
    - ``"order"``: scores ignored; the i-th of n documents (0-based) gets ``(n - i) / n``.
    - ``"auto"`` (the default): ``"order"`` when no document carries a score; otherwise every
      document must carry one, and ``"unit"`` applies when all lie in [0, 1], ``"minmax"`` when
      any does not (BM25 and other unbounded scores).

    Relative scores (``"minmax"``, ``"order"``) make the request's ``relevance_threshold`` 0
    unless the caller sets one: an absolute floor means nothing on them.
    """
    if mode not in SCORE_MODES:
        raise ValueError(f"scores must be one of {list(SCORE_MODES)}, got {mode!r}")
    n = len(items)
    if mode == "auto" and all(it.score is None for it in items):
        mode = "order"
    if mode == "order":
        return [(n - i) / n for i in range(n)], True
    values: list[float] = []
    for i, it in enumerate(items):
        if it.score is None:
            raise MappingError(names[i], score_field, f"no score, while scores={mode!r} needs one on every document"
                               + (" (the others carry one)" if mode == "auto" else ""))
        value = real(it.score)
        if value is None:
            raise MappingError(names[i], score_field, f"a score must be a finite number, got {it.score!r}")
        if mode == "unit" and not 0.0 <= value <= 1.0:
            raise MappingError(names[i], score_field, f"{value!r} is outside [0, 1] (scores='unit'); "
                                                      "use scores='minmax' for unbounded scores")
        values.append(value)
    if mode == "auto":
        mode = "unit" if all(0.0 <= v <= 1.0 for v in values) else "minmax"
    if mode == "unit":
        return values, False
    lo, hi = min(values), max(values)
    return ([1.0] * n if hi == lo else [(v - lo) / (hi - lo) for v in values]), True

def build_request(query: str | None, items: Sequence[Item], *, keys: MetadataKeys | None = None,
                  scores: str = "auto", score_field: str = "score", top_k: int | None = None,
                  profile: str | None = None, request: Mapping[str, Any] | None = None,
                  reranker_field: str = "reranker score") -> pb.RankRequest:
    """The RankRequest for a query and a framework's documents, the documents as ``RankRequest.columns`` and
    their embeddings packed (``embeddings_f32``).

    ``request`` holds further RankRequest fields in protobuf JSON form (e.g.
    ``{"referenceTime": "2026-06-01T00:00:00Z", "placement": "PLACEMENT_EDGES",
    "budget": {"maxTokens": 2000}}``); it may not set ``query`` or the candidates.
    ``top_k`` becomes ``budget.max_items``; ``score_field`` names the score in errors, ``reranker_field``
    the ``Item.reranker`` score.
    """
    keys = keys or MetadataKeys()
    extra = dict(request or {})
    clash = sorted(_FILLED & set(extra))
    if clash:
        raise ValueError(f"request may not set {clash}: the adapter fills them from the documents")
    try:
        req = fill(pb.RankRequest(), extra)
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        raise ValueError(f"request is not a RankRequest in protobuf JSON form: {err!r}") from None
    if query:
        req.query = query
    if profile:
        req.profile = profile
    if top_k is not None:
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_UINT32:
            raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
        req.budget.max_items = top_k
    seen: dict[str, int] = {}
    idents: list[str] = []
    for i, it in enumerate(items):
        ident = document_id(i, it, keys)
        if ident in seen:
            raise MappingError(doc_name(i, ident), "id", f"the same id as document {seen[ident]}: ids must be unique "
                                                      "(deduplicate before ranking)")
        seen[ident] = i
        idents.append(ident)
    names = [doc_name(i, ident) for i, ident in enumerate(idents)]
    values, relative = retrieval_scores(items, scores, score_field, names)
    reader = CandidateReader(keys)
    cands = [reader.candidate(names[i], idents[i], it, values[i], reranker_field) for i, it in enumerate(items)]
    first: tuple[int, int] | None = None  # (document, dimension) of the first embedding
    for i, c in enumerate(cands):
        if (vector := c.get("embedding")) is not None:
            if first is None:
                first = (i, len(vector))
            elif len(vector) != first[1]:
                raise MappingError(names[i], "embedding", f"{len(vector)} dimensions, while {names[first[0]]} has "
                                                          f"{first[1]}: one dimension per batch")
    if not put_columns(req, cands):  # pragma: no cover - only facet and stage scores can fail, never sent here
        raise AssertionError("the documents' candidates did not fit RankRequest.columns")
    if relative and not req.HasField("relevance_threshold"):
        req.relevance_threshold = 0.0
    return req


# What build_request fills from the documents (protobuf JSON and field names alike).
_FILLED = frozenset({"query", "candidates", "columns", "embeddingsF32", "embeddings_f32", "embeddingDim",
                     "embedding_dim"})


def document_name(request: pb.RankRequest, index: int) -> str:
    """How errors name the document sent as candidate ``index`` (``candidates[index]``, ``columns.ids[index]``)."""
    return doc_name(index, candidate_ids(request)[index])
