"""Scoring entry point: signals, gates, normalisation and combination, every number explained.

Steps, for one batch under one profile:

1. the safety signal and the temporal checks gate what must never be
   returned; the rest is the *population* that batch-relative signals
   (facet fusion, lexical IDF) are computed over;
2. every signal the profile lists is computed raw (``signals.SIGNALS``);
3. the relevance threshold (on retrieval_score, the caller's absolute score) and the zero-importance gate
   run (precedence in ``core.scoring.gates``);
4. each signal is normalised by its profile normaliser over the ungated
   candidates (gated ones get 0);
5. combination, summed in this exact order so the identity is exact::

       contribution_s = effective_weight_s * normalized_s
       combined       = ((0 + contribution_1) + contribution_2 + ...) + blend_term

   ``weighted_sum`` and ``agent_observer``: effective weight = profile
   weight, blend_term = 0, quality = 0. ``blend``: effective weight =
   (1 - retrieval_blend) * weight, blend_term = retrieval_blend *
   retrieval_score, quality = sum(weight * normalized) in profile order, so
   combined = retrieval_blend * retrieval + (1 - retrieval_blend) * quality.
   Gated candidates get combined = blend_term = quality = 0.
   ``weighted_sum`` under a profile with ``share_constant_weight``: a signal
   whose normalised column is the same for every eligible candidate gets
   effective weight 0 and the others share its weight (``core.scoring.constant``);
   the reasons of every signal involved say so.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from memrank.core.batch import Batch
from memrank.core.profile import Profile
from memrank.core.reasons import with_note
from memrank.core.scoring.constant import clean_weight, constant_columns, shared_weights
from memrank.core.scoring.gates import (
    GateSet,
    floor_gate,
    safety_gate,
    temporal_gates,
    threshold_gate,
    zero_importance_gate,
)
from memrank.core.scoring.scores import Scores, SignalColumn
from memrank.core.signals import RawSignal, get_signal
from memrank.core.signals.base import Reasons, ScoringContext
from memrank.core.signals.normalizers import normalize_columns
from memrank.core.types import DropReason


def score(batch: Batch, ctx: ScoringContext, profile: Profile) -> Scores:
    """Score every candidate of the batch under the profile."""
    return score_gated(batch, ctx, profile, frozenset())


def score_gated(batch: Batch, ctx: ScoringContext, profile: Profile, skip: frozenset[DropReason]) -> Scores:
    """Like ``score``, with the gates named in ``skip`` not applied (admission skips two)."""
    gates = GateSet(batch.n)
    everyone = np.empty(batch.n, dtype=bool)
    everyone.fill(True)
    safe = get_signal("safety")(batch, ctx, profile, everyone)
    safety_gate(gates, safe.values, safe.reasons)
    temporal_gates(gates, batch, ctx.reference_time, skip)
    population = gates.kept
    raws: dict[str, RawSignal] = {"safety": safe}

    def raw(name: str) -> RawSignal:
        if name not in raws:
            raws[name] = get_signal(name)(batch, ctx, profile, population)
        return raws[name]

    for spec in profile.signals:
        raw(spec.name)
    if DropReason.BELOW_THRESHOLD not in skip:
        threshold_gate(gates, batch.retrieval, profile.relevance_threshold)
        floor_gate(gates, batch.retrieval, profile.relevance_floor)
    gate_zero = profile.gate_zero_importance and not ctx.explicit_lookup and DropReason.ZERO_IMPORTANCE not in skip
    if gate_zero or "importance" in raws:
        importance = raw("importance")
        if gate_zero:
            zero_importance_gate(gates, importance.values, importance.reasons)
        values = importance.values
        return _combine(batch, profile, raws, gates, lambda rows: values[rows])
    # Neither weighed nor gated: only the candidates asked about (the selected ones) are looked at, as a
    # batch of their own (a candidate's importance depends on nothing else in the batch).
    return _combine(batch, profile, raws, gates, lambda rows: get_signal("importance")(
        batch.take(rows), ctx, profile, np.ones(len(rows), dtype=bool)).values)


def _combine(batch: Batch, profile: Profile, raws: dict[str, RawSignal], gates: GateSet,
             importance_of: Callable[[np.ndarray], np.ndarray]) -> Scores:
    eligible = gates.kept
    blend = profile.formula == "blend"
    scale = 1.0 - profile.retrieval_blend
    specs = profile.signals
    # One matrix, a row per signal: normalised columns, contributions, and their running sum in profile order.
    normalized = normalize_columns([spec.normalization for spec in specs], [raws[spec.name].values for spec in specs],
                                   eligible)
    weights = [clean_weight(scale * spec.weight) if blend else spec.weight for spec in specs]
    reasons = [raws[spec.name].reasons for spec in specs]
    if profile.share_constant_weight and profile.formula == "weighted_sum":
        weights, reasons = _share(profile, normalized, eligible, reasons)
    contributions = np.array(weights, dtype=np.float64).reshape(-1, 1) * normalized
    combined = _running_sum(contributions)
    quality = _running_sum(np.array([spec.weight for spec in specs], dtype=np.float64).reshape(-1, 1) * normalized) \
        if blend else np.zeros(batch.n)
    columns = tuple(SignalColumn(spec.name, weight, spec.normalization, raws[spec.name].values, norm, contribution, why)
                    for spec, norm, contribution, weight, why
                    in zip(specs, normalized, contributions, weights, reasons, strict=True))
    blend_term = np.where(eligible, profile.retrieval_blend * batch.retrieval, 0.0) if blend else np.zeros(batch.n)
    return Scores(
        signals=columns,
        combined=combined + blend_term,
        blend_term=blend_term,
        quality=quality,
        gate=gates.codes,
        gate_reasons=gates.frozen_reasons(),
        importance_of=importance_of,
    )


def _running_sum(rows: np.ndarray) -> np.ndarray:
    """((0 + rows[0]) + rows[1]) + ..., elementwise in row order (the combined identity's order; no pairwise sum)."""
    acc = np.zeros((rows.shape[0] + 1, rows.shape[1]))
    acc[1:] = rows
    total: np.ndarray = np.add.accumulate(acc, axis=0)[-1]
    return total


def _share(profile: Profile, normalized: np.ndarray, eligible: np.ndarray,
           reasons: list[Reasons]) -> tuple[list[float], list[Reasons]]:
    """Effective weights with constant columns' weight shared, and each affected signal's reasons noting it."""
    weights = [spec.weight for spec in profile.signals]
    constant = constant_columns(normalized, eligible)
    effective = shared_weights(weights, constant)
    if effective == weights:
        return weights, reasons
    dead = ", ".join(s.name for s, c in zip(profile.signals, constant, strict=True) if c)
    out: list[Reasons] = []
    for spec, c, w, why in zip(profile.signals, constant, effective, reasons, strict=True):
        if spec.weight == 0.0:
            out.append(why)
            continue
        if c:
            note = (f"the same for every eligible candidate: no information in this request, weight 0 "
                    f"(profile {spec.weight:g}) shared by the other signals")
        else:
            note = f"weight {w:g} (profile {spec.weight:g}): shares the weight of {dead}, the same for every candidate"
        out.append(with_note(why, note))
    return effective, out
