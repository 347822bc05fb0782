"""Lexical overlap between the query and a memory, done right.

Query terms are the ``text.terms`` of the query: Unicode word tokens,
lower-cased, English stop words removed, duplicates removed. A memory's
terms come from its head/tail sample (``text.tokens``). Each query term t
weighs its smoothed IDF over the population (the ungated candidates)::

    idf(t) = ln((1 + N) / (1 + df(t))) + 1

(N = population size, df = population memories containing t; always > 0,
so rare terms weigh more and a term in every memory still counts a little).
The signal is the IDF share of the query found in the memory::

    lexical = sum(idf(t) for t in query terms found) / sum(idf(t) for t in query terms)

in [0, 1]; 0 for every candidate when the query has no terms.
"""

from __future__ import annotations

import math

import numpy as np

from memrank.core.batch import Batch
from memrank.core.reasons import Lazy, Same
from memrank.core.scores import ScoringContext
from memrank.core.signals.base import RawSignal
from memrank.core.text.buffers import token_index, token_index_of
from memrank.core.text.index import WordIndex
from memrank.core.text.normalize import terms
from memrank.profiles.model import Profile

_SHOWN_TERMS = 5
_LEARN_ABOVE = 8  # query terms: up to this many, each is one scan of the word hashes (cheaper than a sort)


def presence(query_terms: list[str], contents: tuple[str, ...]) -> np.ndarray:
    """(n, terms) boolean matrix: does memory i contain query term j (among its ``text.tokens``)."""
    return _presence(query_terms, token_index_of(contents))


def _presence(query_terms: list[str], index: WordIndex) -> np.ndarray:
    out = np.zeros((index.n, len(query_terms)), dtype=bool)
    if len(query_terms) > _LEARN_ABOVE:  # one sorted presence test rules out the absent terms; a few are scanned
        index.learn(query_terms)
    for j, t in enumerate(query_terms):  # one column per term, from the batch's word index
        out[:, j] = index.has(t)
    return out


def smooth_idf(hits: np.ndarray, population: np.ndarray) -> np.ndarray:
    """ln((1 + N) / (1 + df)) + 1 per query term, over the population rows of hits."""
    n_pop = int(population.sum())
    df = hits[population].sum(axis=0).astype(np.float64)
    return np.asarray(np.log((1.0 + n_pop) / (1.0 + df)) + 1.0, dtype=np.float64)


def lexical(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """IDF-weighted share of the query terms found in each memory."""
    query_terms = terms(ctx.query)
    if not query_terms or batch.n == 0:
        return RawSignal(np.zeros(batch.n), Same(batch.n, "no query terms"))
    hits = _presence(query_terms, token_index(batch))
    idf = smooth_idf(hits, population)
    values = np.clip(hits.astype(np.float64) @ idf / math.fsum(idf.tolist()), 0.0, 1.0)
    return RawSignal(values, Lazy(batch.n, lambda i: _reason(hits[i].tolist(), query_terms)))


def _reason(row: list[bool], query_terms: list[str]) -> tuple[str, ...]:
    found = [t for t, hit in zip(query_terms, row, strict=True) if hit]
    if not found:
        return (f"no query term found (0 of {len(query_terms)})",)
    shown = ", ".join(found[:_SHOWN_TERMS]) + (", ..." if len(found) > _SHOWN_TERMS else "")
    return (f"{len(found)} of {len(query_terms)} query terms found: {shown}",)
