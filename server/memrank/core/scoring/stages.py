"""Order-producing stages before selection: facet fusion and the caller's reranker scores."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from memrank.core.batch import Batch
from memrank.core.profile import Profile
from memrank.core.scoring.scores import Scores
from memrank.core.signals.relevance import fuse
from memrank.core.types import DropReason


@dataclass(frozen=True)
class StagePass:
    """One stage over the whole batch: what it saw and what it produced."""

    stage: str
    objective: str
    provenance: str
    input: np.ndarray  # float64 per candidate
    output: np.ndarray  # float64 per candidate
    population: np.ndarray | None = None  # bool mask ordered by this stage (None = every eligible candidate)


def fusion_log(batch: Batch, scores: Scores, profile: Profile, eligible: np.ndarray) -> StagePass | None:
    """The facet-fusion record (retrieval score in, the fusion's value out), when facets were sent.

    The output is the fused facet value itself: under a profile that blends lexical into relevance
    (``lexical_blend``), the relevance signal is the blend, so the fusion is computed again here over the
    population the signals saw (the candidates the safety and time gates kept).
    """
    relevance = next((c for c in scores.signals if c.name == "relevance"), None)
    if not batch.facets or relevance is None:
        return None
    fused = relevance.raw
    if profile.lexical_blend > 0.0:
        population = np.isin(scores.gate, (DropReason.KEPT, DropReason.BELOW_THRESHOLD, DropReason.ZERO_IMPORTANCE))
        fused, _ = fuse(batch, profile, population)
    return StagePass("fusion", f"fuse facets {', '.join(sorted(batch.facets))} by {profile.fusion}",
                    f"memrank:{profile.fusion}", batch.retrieval.astype(np.float64), fused.astype(np.float64))


def _minmax(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    out = np.full(values.shape, np.nan)
    if not mask.any():
        return out
    lo, hi = values[mask].min(), values[mask].max()
    out[mask] = 0.5 if hi == lo else (values[mask] - lo) / (hi - lo)
    return out


def blend_stage_scores(batch: Batch, profile: Profile, current: np.ndarray,
                       eligible: np.ndarray) -> Iterator[StagePass]:
    """Blend each caller stage score the profile weighs: out = (1 - w) * in + w * minmax(stage).

    The stage score is min-max normalised over the eligible candidates that
    carry it; a candidate without it keeps its score. Stages run in name order.
    A stage score the profile gives no weight is not silently lost: it gets a
    record of its own whose output is its input ("ignored"), after the
    weighed ones.
    """
    for name in sorted(profile.stage_weights):
        if name not in batch.stage_scores:
            continue
        w = profile.stage_weights[name]
        values = batch.stage_scores[name]
        mask = eligible & ~np.isnan(values)
        if not mask.any():
            continue
        norm = _minmax(values, mask)
        out = np.where(mask, (1.0 - w) * current + w * np.nan_to_num(norm), current)
        yield StagePass(f"rerank:{name}", f"blend caller scores {name!r} with weight {w:g}", f"caller:{name}",
                       current.copy(), out)
        current = out
    for name in sorted(set(batch.stage_scores) - set(profile.stage_weights)):
        yield StagePass(f"rerank:{name}", f"ignored: profile {profile.name!r} gives caller scores {name!r} no weight "
                       f"(stage_weights)", f"caller:{name}", current.copy(), current.copy())
