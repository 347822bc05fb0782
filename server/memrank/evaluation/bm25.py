"""BM25 scores of every turn exactly as LlamaIndex's ``BM25Retriever`` computes them by default (bm25s + PyStemmer).

``BM25Retriever.from_defaults(nodes=...)`` (llama-index-retrievers-bm25 0.8)
indexes each node's text with ``bm25s.tokenize(texts, stopwords="en",
stemmer=Stemmer.Stemmer("english"), token_pattern=r"(?u)\\b\\w\\w+\\b")``
and ``bm25s.BM25()`` defaults: Lucene BM25, k1 = 1.5, b = 0.75, float32,

    score(d, q) = sum over query tokens t in the vocabulary of
                  ln(1 + (N - df_t + 0.5) / (df_t + 0.5))
                  * tf_td / (tf_td + k1 * (1 - b + b * |d| / avgdl))

Tokens are lowercased ``\\w\\w+`` runs minus bm25s's 33 English stop words
(the Lucene list: "a", "the", "was", "will", ... but not "me", "own", "so"),
removed before stemming. The query is tokenised on its own by the same
``bm25s.tokenize`` call except that ``stopwords`` is left at its default,
"english", which is the same list as "en"; a repeated query token counts
once per occurrence, and tokens not in the corpus vocabulary are dropped
(every score 0 when none is left; the retriever then still returns k nodes
scored 0.0). ``stem=False`` is the same without a stemmer, which is what
memrank.evaluation.retrieval's BM25 does. Texts are used as given: a
LlamaIndex node with metadata would be indexed with its metadata prefixed.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from memrank.evaluation._deps import require

TOKEN_PATTERN = r"(?u)\b\w\w+\b"  # BM25Retriever's default (= bm25s's)
STEMMER_LANGUAGE = "english"


def _stemmer(stem: bool) -> Any:
    return require("Stemmer", "PyStemmer").Stemmer(STEMMER_LANGUAGE) if stem else None


@lru_cache(maxsize=8)
def _index(corpus: tuple[str, ...], stem: bool) -> Any:
    bm25s = require("bm25s")
    tokens = bm25s.tokenize(list(corpus), stopwords="en", stemmer=_stemmer(stem), token_pattern=TOKEN_PATTERN,
                            show_progress=False)
    index = bm25s.BM25()
    index.index(tokens, show_progress=False)
    return index


def bm25_scores(corpus: Sequence[str], query: str, stem: bool = True) -> np.ndarray:
    """BM25 score of every document of ``corpus`` for ``query`` (float64 of bm25s's float32; 0 if no token is known)."""
    if not corpus:
        return np.zeros(0)
    bm25s = require("bm25s")
    index = _index(tuple(corpus), stem)
    words = bm25s.tokenize(query, stemmer=_stemmer(stem), token_pattern=TOKEN_PATTERN, return_ids=False,
                           show_progress=False)[0]
    known = [w for w in words if w in index.vocab_dict]
    if not known:
        return np.zeros(len(corpus))
    return np.asarray(index.get_scores(known), dtype=np.float64)
