"""Lexical overlap between the query and a memory, done right.

Query terms are the ``text.words.terms`` of the query: Unicode word tokens,
lower-cased, English stop words removed, duplicates removed. A memory's
terms come from its head/tail sample (``text.words.tokens``). Each query term t
weighs its smoothed IDF over the population (the ungated candidates)::

    idf(t) = ln((1 + N) / (1 + df(t))) + 1

(N = population size, df = population memories containing t; always > 0,
so rare terms weigh more and a term in every memory still counts a little).
The signal is the IDF share of the query found in the memory::

    lexical = sum(idf(t) for t in query terms found) / sum(idf(t) for t in query terms)

in [0, 1]; 0 for every candidate when the query has no terms.

With ``profile.lexical_stemmer`` set to a Snowball language (``text.stem``),
a query term is found in a memory when some word of the memory has the same
stem ("painting" finds "painted"), query terms sharing a stem count once,
and IDF counts the memories holding any form of it; the query also loses
that language's stop words (``text.stopwords``). Unset (every built-in
profile but ``default``): exact words, as above.
"""

from __future__ import annotations

import math

import numpy as np

from memrank.core.batch import Batch
from memrank.core.profile import Profile
from memrank.core.reasons import Lazy, Same
from memrank.core.signals.base import SMALL_BATCH, RawSignal, ScoringContext
from memrank.core.text.buffers import token_index
from memrank.core.text.hashing import encode
from memrank.core.text.index import WordIndex
from memrank.core.text.stem import StemRule, matching, stem
from memrank.core.text.stopwords import BY_LANGUAGE
from memrank.core.text.words import terms, tokens

_SHOWN_TERMS = 5
SMALL_CHARS = 2048  # with at most SMALL_BATCH memories, up to this many characters in all are read in Python


def _presence(query_terms: list[str], index: WordIndex) -> np.ndarray:
    out = np.zeros((index.n, len(query_terms)), dtype=bool)
    for j, t in enumerate(query_terms):  # one column per term, from the batch's word index
        out[:, j] = index.has(t)
    return out


def _stemmed_presence(query_terms: list[str], index: WordIndex, language: str) -> tuple[np.ndarray, list[str]]:
    """(n, stems) presence of each distinct query stem, and the first query term of each stem (its label)."""
    labels = _stem_labels(language, query_terms)
    stems = list(labels)
    which = matching(index, language, stems)
    out = np.zeros((index.n, len(stems)), dtype=bool)
    at = np.flatnonzero(which >= 0)
    out[index.owner[at], which[at]] = True
    return out, list(labels.values())


def _stem_labels(language: str, query_terms: list[str]) -> dict[str, str]:
    """Each distinct stem of the query terms, with the first term of that stem (its label)."""
    labels: dict[str, str] = {}
    for t in query_terms:
        labels.setdefault(stem(language, t), t)
    return labels


def smooth_idf(hits: np.ndarray, population: np.ndarray) -> np.ndarray:
    """ln((1 + N) / (1 + df)) + 1 per query term, over the population rows of hits."""
    n_pop = int(population.sum())
    df = hits[population].sum(axis=0).astype(np.float64)
    return np.asarray(np.log((1.0 + n_pop) / (1.0 + df)) + 1.0, dtype=np.float64)


def lexical(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """IDF-weighted share of the query terms found in each memory."""
    query_terms = terms(ctx.query, BY_LANGUAGE.get(profile.lexical_stemmer or "", frozenset()))
    if not query_terms or batch.n == 0:
        return RawSignal(np.zeros(batch.n), Same(batch.n, "no query terms"))
    hits, query_terms = _hits(batch, query_terms, profile.lexical_stemmer)
    idf = smooth_idf(hits, population)
    values = np.clip(hits.astype(np.float64) @ idf / math.fsum(idf.tolist()), 0.0, 1.0)
    return RawSignal(values, Lazy(batch.n, lambda i: _reason(hits[i].tolist(), query_terms)))


def _hits(batch: Batch, query_terms: list[str], stemmer: str | None) -> tuple[np.ndarray, list[str]]:
    """The presence matrix and its column labels, found once per batch, query and stemmer: the context
    signal's neighbour match and a lexical blend read the same matrix (it does not depend on the gates)."""
    hits, labels = batch.memo.get(("lexical hits", stemmer, tuple(query_terms)),
                                  lambda: _find_hits(batch, query_terms, stemmer))
    return hits, list(labels)


def _find_hits(batch: Batch, query_terms: list[str], stemmer: str | None) -> tuple[np.ndarray, list[str]]:
    if batch.n <= SMALL_BATCH and sum(map(len, batch.contents)) <= SMALL_CHARS:
        # the word index instead: +8.4 % instructions per call at 1 x 384 (5.14 -> 5.57 M), columns +11.4 %
        # (5.34 -> 5.95 M); 100 and 400 unchanged (``bench.instructions``, see SMALL_BATCH)
        found = _small_presence(query_terms, batch.contents, stemmer)
    elif stemmer:
        found = _stemmed_presence(query_terms, token_index(batch), stemmer)
    else:
        found = (_presence(query_terms, token_index(batch)), query_terms)
    found[0].setflags(write=False)
    return found


def _small_presence(query_terms: list[str], contents: tuple[str, ...],
                    stemmer: str | None) -> tuple[np.ndarray, list[str]]:
    """``_presence`` / ``_stemmed_presence`` of a few short memories, read off each one's ``tokens`` in Python
    (the same ``StemRule``): what the word index answers column-wise, without its fixed numpy calls."""
    words = [set(tokens(c)) for c in contents]
    if not stemmer:
        found = [[t in ws for t in query_terms] for ws in words]
        return np.array(found, dtype=bool).reshape(len(contents), len(query_terms)), query_terms
    labels = _stem_labels(stemmer, query_terms)
    rule = StemRule(stemmer, list(labels))
    out = np.zeros((len(contents), len(labels)), dtype=bool)
    for i, ws in enumerate(words):
        for w in ws:
            k = rule.which(w, encode(w))
            if k >= 0:
                out[i, k] = True
    return out, list(labels.values())


def _reason(row: list[bool], query_terms: list[str]) -> tuple[str, ...]:
    found = [t for t, hit in zip(query_terms, row, strict=True) if hit]
    if not found:
        return (f"no query term found (0 of {len(query_terms)})",)
    shown = ", ".join(found[:_SHOWN_TERMS]) + (", ..." if len(found) > _SHOWN_TERMS else "")
    return (f"{len(found)} of {len(query_terms)} query terms found: {shown}",)
