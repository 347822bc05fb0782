"""Relevance: the caller's retrieval score, or a fusion of its facet scores.

With no facet scores in the batch, relevance is ``retrieval_score``. With
facets (at most 4), the profile's ``fusion`` combines them; a candidate
without a facet gets nothing from it (and 0 when it has none at all):

- ``max``: the largest facet score, each clipped to [0, 1] first (facets must
  share that scale; an unbounded one such as raw BM25 wants ``weighted`` or
  ``rrf``, which read only its ranks or its min-max).
- ``weighted``: sum_f w_f x minmax_f / sum_f w_f, each facet min-max
  normalised over the population candidates that have it; w_f comes from
  ``profile.facet_weights`` (1.0 for facets it does not name), so the value
  stays in [0, 1].
- ``rrf``: sum_f 1 / (60 + rank_f), rank_f the 1-based rank of the candidate
  within facet f among population candidates having it (ties: input order).

The strongest facet (largest part of the fused value; ties: facet name
order) is named in the reasons. With ``profile.lexical_blend`` = b > 0 the
result is (1 - b) x fused + b x lexical. Every fusion gives a value in [0, 1].
"""

from __future__ import annotations

import math

import numpy as np

from memrank.core.batch import Batch
from memrank.core.profile import Profile
from memrank.core.reasons import Lazy, Reasons, Same, Table
from memrank.core.signals.base import RawSignal, ScoringContext, same_reason
from memrank.core.signals.lexical import lexical
from memrank.core.signals.normalizers import min_max

RRF_K = 60


def retrieval(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """The caller's retrieval_score, as sent."""
    return RawSignal(batch.retrieval.astype(np.float64), same_reason(batch.n, "retrieval_score"))


def _parts(batch: Batch, profile: Profile, population: np.ndarray) -> np.ndarray:
    """(n, facets) matrix of each facet's part of the fused value, NaN where missing."""
    names = list(batch.facets)
    raw = np.stack([batch.facets[f] for f in names], axis=1)
    has = ~np.isnan(raw)
    if profile.fusion == "max":
        # Facets on a [0, 1] scale are compared as they are; beyond it clipped, so relevance stays in [0, 1]
        # (an unbounded score such as raw BM25 wants weighted or rrf).
        return np.asarray(raw.clip(0.0, 1.0), dtype=np.float64)
    parts = np.full(raw.shape, np.nan)
    for j, name in enumerate(names):
        pop = population & has[:, j]
        if profile.fusion == "weighted":
            parts[has[:, j], j] = profile.facet_weights.get(name, 1.0) * min_max(raw[:, j], pop)[has[:, j]]
        else:
            order = np.argsort(-np.where(pop, raw[:, j], -np.inf), kind="stable")[: int(pop.sum())]
            parts[order, j] = 1.0 / (RRF_K + np.arange(1, order.shape[0] + 1))
    return parts


def fuse(batch: Batch, profile: Profile, population: np.ndarray) -> tuple[np.ndarray, Table]:
    """The fused facet value of every candidate (before any lexical blend), and each one's reason."""
    names = list(batch.facets)
    parts = _parts(batch, profile, population)
    present = ~np.isnan(parts)
    filled = np.where(present, parts, -np.inf)
    strongest = np.argmax(filled, axis=1)
    if profile.fusion == "max":
        fused = filled.max(axis=1)
    else:
        fused = np.where(present, parts, 0.0).sum(axis=1)
        if profile.fusion == "weighted":
            # fsum: correctly rounded on every Python (3.12's sum() of floats compensates, 3.11's does not)
            total = math.fsum(profile.facet_weights.get(f, 1.0) for f in names)
            fused = fused / total if total > 0 else np.zeros_like(fused)
    any_facet = present.any(axis=1)
    fused = np.where(any_facet, fused, 0.0)
    table = [f"fusion {profile.fusion} of {len(names)} facets; strongest facet: {name}" for name in names]
    codes = np.where(any_facet, strongest, len(names)).tolist()
    return fused, Table(codes, [*((t,) for t in table), ("no facet scores: 0",)])


def relevance(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """Relevance from retrieval_score or fused facet scores, optionally blended with lexical."""
    labels: Reasons
    if batch.facets:
        values, labels = fuse(batch, profile, population)
    else:
        values, labels = batch.retrieval.astype(np.float64), Same(batch.n, "retrieval_score (no facets)")
    b = profile.lexical_blend
    if b <= 0.0:
        return RawSignal(values, labels)
    lex = lexical(batch, ctx, profile, population).values
    note = f"blended with lexical: {1.0 - b:g} x fused + {b:g} x lexical"
    return RawSignal((1.0 - b) * values + b * lex, Lazy(batch.n, lambda i: (*labels[i], note)))
