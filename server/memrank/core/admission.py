"""Admission scoring: should one new memory be stored, held for review, or rejected?

The memory is scored alone (a batch of one) under the admission profile
(``lians-admission`` by default, normalisation "none"), then::

    ADMIT   score >= profile.admit_threshold   (0.6 by default)
    HOLD    score >= profile.hold_threshold    (0.4 by default; a review queue)
    REJECT  below, or gated

score = the combined score clipped to [0, 1]. Gates at admission: safety,
EXPIRED and (in a profile with ``gate_zero_importance``; not
``lians-admission``, whose seed has no such gate) ZERO_IMPORTANCE reject;
FUTURE_EVENT and NOT_YET_VALID do not
apply (a reminder of a future event is worth storing) and the reasons say
so. Reserved metadata keys (leading "_") are ignored and named in the reasons.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memrank.core.batch import Batch
from memrank.core.profile import Profile
from memrank.core.scoring.combine import score_gated
from memrank.core.scoring.scores import Scores, SignalColumn
from memrank.core.signals.base import ScoringContext
from memrank.core.signals.confidence import reserved_keys
from memrank.core.types import AdmissionDecision, DropReason

_NOT_GATES_AT_ADMISSION = frozenset({DropReason.FUTURE_EVENT, DropReason.NOT_YET_VALID})


@dataclass(frozen=True)
class AdmissionResult:
    """The admission decision for one memory, with its breakdown."""

    decision: AdmissionDecision
    score: float  # in [0, 1]
    signals: tuple[SignalColumn, ...]  # columns of length 1
    reasons: tuple[str, ...]
    gate: DropReason  # KEPT unless a gate rejected it
    scores: Scores  # the full scores of the batch of one (combined, blend_term, quality, gate reasons)
    admit_threshold: float
    hold_threshold: float


def _decide(value: float, gate: DropReason, profile: Profile) -> tuple[AdmissionDecision, str]:
    if gate != DropReason.KEPT:
        return AdmissionDecision.REJECT, f"rejected: gated ({gate.name})"
    if value >= profile.admit_threshold:
        return AdmissionDecision.ADMIT, f"admitted: score {value:.4f} >= admit threshold {profile.admit_threshold:g}"
    if value >= profile.hold_threshold:
        return AdmissionDecision.HOLD, f"held: score {value:.4f} >= hold threshold {profile.hold_threshold:g}"
    return AdmissionDecision.REJECT, f"rejected: score {value:.4f} < hold threshold {profile.hold_threshold:g}"


def _temporal_notes(batch: Batch, ctx: ScoringContext) -> list[str]:
    notes = []
    if batch.event_time[0] > ctx.reference_time:
        notes.append("event_time after the reference time: not a gate for admission")
    if ctx.reference_time < batch.valid_from[0]:
        notes.append("valid_from after the reference time: not a gate for admission")
    return notes


def score_admission(batch: Batch, ctx: ScoringContext, profile: Profile) -> AdmissionResult:
    """Score a batch of exactly one memory for admission."""
    if batch.n != 1:
        raise ValueError(f"score_admission takes a batch of one memory, got {batch.n}")
    scores = score_gated(batch, ctx, profile, _NOT_GATES_AT_ADMISSION)
    value = float(np.clip(scores.combined[0], 0.0, 1.0))
    gate = DropReason(int(scores.gate[0]))
    decision, why = _decide(value, gate, profile)
    reasons = [why, *scores.gate_reasons[0], *_temporal_notes(batch, ctx)]
    reserved = reserved_keys(batch.metadata[0])
    if reserved:
        reasons.append(f"reserved metadata keys ignored: {', '.join(reserved)}")
    return AdmissionResult(
        decision=decision, score=value, signals=scores.signals, reasons=tuple(reasons), gate=gate, scores=scores,
        admit_threshold=profile.admit_threshold, hold_threshold=profile.hold_threshold,
    )
