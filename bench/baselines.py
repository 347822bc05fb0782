"""Side-by-side baselines on the same batches: slow reference ports, LangChain, and the protobuf floor."""

from __future__ import annotations

import datetime
import random
import re
from collections.abc import Callable

from bench.data import QUERY, REFERENCE_TIME, Workload
from memrank.core.text.words import terms
from tests.support.reference import GAMemory, agent_observer_score, generative_agents_scores, lexical_idf_score

_WORD = re.compile(r"\w+")


def filled_importance(w: Workload) -> tuple[float, ...]:
    """Every candidate's importance for the generative-agents pair: the caller's value, else a seeded one.

    The reference formula reads an importance for every memory (Park et al. rate it at write time), so the
    pair is measured on a batch where every candidate carries one; memrank's rules for unset importance are
    its own addition and not part of that formula.
    """
    rng = random.Random(w.n)
    return tuple(r.importance if r.importance is not None else round(rng.random(), 3) for r in w.rows)


def port_scorers(w: Workload) -> dict[str, Callable[[], list[float]]]:
    """The literal per-candidate pure-Python ports of the reference scorers, one callable each.

    Each computes exactly what memrank's ``score()`` computes in its pair (``bench/run.py: core_vs_ports``
    checks the outputs agree to 1e-9): the Go scorer; the generative-agents formula with every importance
    given (``filled_importance``); the lexical IDF share with memrank's query terms (stop words removed,
    ``text.words.terms``, an input computed once as the tests do) over each content's ``\\w+`` words.
    """
    rows = w.rows
    query_terms = terms(QUERY)
    importance = filled_importance(w)

    def agent_observer() -> list[float]:
        return [agent_observer_score(QUERY, r.kind, r.content, r.retrieval_score, r.access_count) for r in rows]

    def generative_agents() -> list[float]:
        memories = [GAMemory(r.retrieval_score, imp, r.created_at, r.last_accessed_at)
                    for r, imp in zip(rows, importance, strict=True)]
        return generative_agents_scores(memories, REFERENCE_TIME)

    def lexical_idf() -> list[float]:
        docs = [set(_WORD.findall(r.content.lower())) for r in rows]
        population = [True] * len(rows)
        return [lexical_idf_score(query_terms, docs, population, i) for i in range(len(rows))]

    return {"agent-observer": agent_observer, "generative-agents": generative_agents, "lexical-idf": lexical_idf}


def langchain_available() -> bool:
    """True when the bench extra (langchain-classic, langchain-core) is installed."""
    try:
        import langchain_classic.retrievers  # noqa: F401
        import langchain_core.vectorstores.utils  # noqa: F401
    except ImportError:
        return False
    return True


def langchain_rank(w: Workload, k: int) -> Callable[[], list[int]]:
    """LangChain's TimeWeightedVectorStoreRetriever scoring plus maximal_marginal_relevance, in-process.

    What a Python team would otherwise run: combined score per document
    (``_get_combined_score``: decay ** hours since last access + vector
    relevance) for every document, then MMR (lambda 0.7, as memrank's default
    profile) over the whole batch down to k, on the same batch and embeddings.
    """
    from langchain_classic.retrievers import TimeWeightedVectorStoreRetriever
    from langchain_core.documents import Document
    from langchain_core.vectorstores.utils import maximal_marginal_relevance

    retriever = TimeWeightedVectorStoreRetriever.model_construct(
        vectorstore=None, decay_rate=0.005, k=k, other_score_keys=["importance"], memory_stream=[],
        search_kwargs={}, default_salience=None)
    now = datetime.datetime.fromtimestamp(REFERENCE_TIME)
    docs = []
    for r in w.rows:
        last = r.last_accessed_at if r.last_accessed_at is not None else r.created_at
        meta: dict[str, object] = {"last_accessed_at": datetime.datetime.fromtimestamp(last or REFERENCE_TIME)}
        if r.importance is not None:
            meta["importance"] = r.importance
        docs.append(Document(page_content=r.content, metadata=meta))
    relevance = [r.retrieval_score for r in w.rows]
    if w.embeddings is None or w.query_embedding is None:
        raise ValueError("the LangChain baseline needs embeddings")
    embeddings = w.embeddings  # an array, not lists of floats: the fastest input LangChain accepts
    query = w.query_embedding

    def run() -> list[int]:
        scored = [retriever._get_combined_score(d, s, now) for d, s in zip(docs, relevance, strict=True)]
        order = sorted(range(len(scored)), key=scored.__getitem__, reverse=True)
        picked = maximal_marginal_relevance(query, embeddings[order], lambda_mult=0.7, k=k)  # type: ignore[arg-type]
        return [order[j] for j in picked]

    return run
