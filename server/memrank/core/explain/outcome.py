"""What a ranking returns, as columns plus the selection decisions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memrank.core.profile import Profile
from memrank.core.scoring.scores import Scores
from memrank.core.selection.budget import Allocation

SCORING_SCHEMA = "memrank.score.v1"


@dataclass(frozen=True)
class StageRecord:
    """One order-producing stage applied to a selected memory."""

    stage: str
    objective: str
    provenance: str
    input_score: float
    position: int
    output_score: float


@dataclass(frozen=True)
class ShadowResult:
    """The shadow profile's selection compared with the answer."""

    profile: str
    k: int
    overlap_at_k: float
    kendall_tau: float
    selected_ids: tuple[str, ...]
    common: int = 0  # memories both selected: kendall_tau is defined (not the 1.0 convention) when >= 2


@dataclass(frozen=True)
class RankOutcome:
    """Selection of one request: every candidate is either in ``ranked`` or has a drop reason."""

    profile: Profile
    scores: Scores
    layer_of: tuple[str, ...]  # effective layer per candidate ("other" = catch-all)
    token_count: np.ndarray  # int64 per candidate (estimated where the caller sent 0)
    token_estimated: np.ndarray  # bool per candidate
    final: np.ndarray  # float64 per candidate: score after every stage
    drop: np.ndarray  # int8 per candidate: DropReason (0 = selected)
    drop_notes: Sequence[tuple[str, ...]]  # per candidate: why it was dropped (formatted when read)
    ranked: np.ndarray  # int64 candidate indices, rank order (rank = position in this array + 1)
    positions: np.ndarray  # int64 placement position of each ranked memory
    public_score: np.ndarray  # float64 public score of each ranked memory, strictly decreasing
    stages: tuple[tuple[StageRecord, ...], ...]  # per ranked memory
    allocations: tuple[Allocation, ...]
    suggestions: tuple[tuple[int, float], ...]  # (candidate index, suggested importance)
    covered_by: np.ndarray  # int64 per candidate: index of the pick that covers a REDUNDANT one, else -1
    gain: np.ndarray  # float64 per candidate: marginal gain when picked by the diversity pass, else NaN
    bucket_lower: np.ndarray  # float64 per ranked memory
    bucket_upper: np.ndarray  # float64 per ranked memory
    similarity: str  # "cosine", "shingle_jaccard" or "none" (no diversity pass)
    shadow: ShadowResult | None = None

    @property
    def n(self) -> int:
        """Number of candidates."""
        return self.scores.n
