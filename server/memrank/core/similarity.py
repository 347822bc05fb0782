"""Pairwise similarity for diversity: cosine of embeddings, else Jaccard of token shingles.

Embeddings are used when every candidate carries a non-zero one (mixing the
two measures would put them on one scale they do not share). Otherwise each
candidate is a set of word shingles (the 1- and 2-word runs of its head/tail
sample tokens, stop words kept so "not" still counts), and similarity is the
Jaccard index |A ∩ B| / |A ∪ B|, computed for one row at a time through an
inverted index so a pick costs O(postings), never a full n x n matrix.
"""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np

from memrank.core.batch import Batch
from memrank.core.text import tokens


def shingles(text: str) -> frozenset[str]:
    """The unigram and bigram shingles of a text's token sample."""
    words = tokens(text)
    return frozenset(words) | frozenset(f"{a} {b}" for a, b in itertools.pairwise(words))


class Similarity:
    """Similarity rows over one batch, computed lazily per row."""

    def __init__(self, batch: Batch) -> None:
        self.n = batch.n
        self.kind = "none"
        self._unit: np.ndarray | None = None
        if batch.embeddings is not None and self.n:
            norms = np.linalg.norm(batch.embeddings.astype(np.float64), axis=1)
            if (norms > 0).all():
                self._unit = (batch.embeddings / norms[:, None]).astype(np.float32)
                self.kind = "cosine"
        if self._unit is None:
            self.kind = "shingle_jaccard"
            self._sets = [shingles(c) for c in batch.contents]
            self._sizes = np.array([len(s) for s in self._sets], dtype=np.float64)
            postings: dict[str, list[int]] = defaultdict(list)
            for i, s in enumerate(self._sets):
                for sh in s:
                    postings[sh].append(i)
            self._postings = {k: np.array(v, dtype=np.int64) for k, v in postings.items()}

    def row(self, i: int) -> np.ndarray:
        """Similarity of candidate i to every candidate, float64 in [0, 1] (cosine clipped at 0)."""
        if self._unit is not None:
            cos: np.ndarray = np.clip(self._unit @ self._unit[i], 0.0, 1.0).astype(np.float64)
            return cos
        if not self._sets[i]:
            return np.zeros(self.n)
        hits = [self._postings[s] for s in self._sets[i]]
        inter = np.bincount(np.concatenate(hits), minlength=self.n).astype(np.float64)
        union = self._sizes + self._sizes[i] - inter
        jaccard: np.ndarray = np.divide(inter, union, out=np.zeros(self.n), where=union > 0)
        return jaccard
