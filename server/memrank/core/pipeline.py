"""The ranking pipeline: score -> gates -> stages -> select per layer -> calibrate -> order. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from memrank.core.batch import Batch, LayerSpec, RankParams
from memrank.core.errors import FieldViolation, InvalidRequest, UnknownProfile
from memrank.core.explain.outcome import RankOutcome, ShadowResult, StageRecord
from memrank.core.explain.shadow import kendall_tau_b, overlap_at_k
from memrank.core.features import FeatureStore, memory_features
from memrank.core.profile import Profile
from memrank.core.reasons import Lazy
from memrank.core.scoring.combine import score
from memrank.core.scoring.gates import min_score_gate
from memrank.core.scoring.stages import StagePass, blend_stage_scores, fusion_log
from memrank.core.selection.calibrate import SCHEME as CALIBRATION_SCHEME
from memrank.core.selection.calibrate import calibrate
from memrank.core.selection.order import placement_positions, tie_order
from memrank.core.selection.select import CATCH_ALL_LAYER, Pool, SelectParams, select
from memrank.core.selection.select import drop_note as selection_note
from memrank.core.selection.similarity import reads_text
from memrank.core.signals.base import ScoringContext
from memrank.core.text.buffers import release_indexes
from memrank.core.text.words import estimated_tokens
from memrank.core.types import DropReason, Placement

# Feedback: a selected memory's importance moves this share of the way to 1.
IMPORTANCE_RAISE = 0.1


def resolve_profile(profiles: Mapping[str, Profile], name: str, field: str = "profile") -> Profile:
    """The named profile ("" = default), or UnknownProfile naming the known ones."""
    key = name or "default"
    if key not in profiles:
        known = ", ".join(sorted(profiles))
        raise UnknownProfile([FieldViolation(field, f"unknown profile {key!r}; known profiles: {known}")])
    return profiles[key]


def apply_overrides(profile: Profile, overrides: Mapping[str, float]) -> Profile:
    """The profile with per-request weight overrides, refusing signals it does not use."""
    names = {s.name for s in profile.signals}
    bad = [FieldViolation(f'weight_overrides["{k}"]', f"profile {profile.name!r} has no signal {k!r}; "
                          f"its signals: {', '.join(sorted(names))}") for k in sorted(overrides) if k not in names]
    if bad:
        raise InvalidRequest(bad)
    return profile.with_overrides(overrides)


def estimate_tokens(batch: Batch) -> tuple[np.ndarray, np.ndarray]:
    """Token counts: the caller's, else ceil(characters / 4) (``estimated_tokens``), with a flag where estimated."""
    estimated = batch.token_count == 0
    chars = np.fromiter(map(len, batch.contents), dtype=np.int64, count=batch.n)
    return np.where(estimated, estimated_tokens(chars), batch.token_count), estimated


def assign_layers(batch: Batch, layers: tuple[LayerSpec, ...]) -> tuple[str, ...]:
    """Each candidate's layer, or the catch-all when its layer has no policy."""
    names = {layer.name for layer in layers}
    of = {name: name if name in names else CATCH_ALL_LAYER for name in set(batch.layers)}
    return tuple(map(of.__getitem__, batch.layers))


def _request_threshold(profile: Profile, params: RankParams) -> Profile:
    """The profile with the request's relevance threshold, when the request sets one: the caller's floor on its
    own scale replaces the profile's threshold and its batch floor."""
    if params.relevance_threshold is None:
        return profile
    return replace(profile, relevance_threshold=params.relevance_threshold, relevance_floor=None)


def rank(
    batch: Batch,
    params: RankParams,
    profiles: Mapping[str, Profile],
    default_layers: tuple[LayerSpec, ...] = (),
    provenance_key: bytes | None = None,
    features: FeatureStore | None = None,
) -> RankOutcome:
    """Rank one batch: every candidate ends selected or dropped with a reason (``features``: the runtime's store
    of memories' own features, ``core.features``; it changes no result, only what is recomputed)."""
    profile = _request_threshold(apply_overrides(resolve_profile(profiles, params.profile), params.weight_overrides),
                                 params)
    if features is not None:  # kept in the batch's memo, where the signals read them (``signals.base.own_features``)
        memory_features(batch, features)
    ctx = ScoringContext(params.query, params.reference_time, params.explicit_lookup, provenance_key)
    outcome = _rank_with(profile, batch, params, params.layers or default_layers, ctx, not params.shadow_profile)
    if not params.shadow_profile:
        return outcome
    shadow_profile = _request_threshold(resolve_profile(profiles, params.shadow_profile, "shadow_profile"), params)
    shadow = _rank_with(shadow_profile, batch, params, params.layers or default_layers, ctx)
    real_ids = [batch.ids[i] for i in outcome.ranked]
    shadow_ids = [batch.ids[i] for i in shadow.ranked]
    k, overlap = overlap_at_k(real_ids, shadow_ids)
    result = ShadowResult(shadow_profile.name, k, overlap, kendall_tau_b(real_ids, shadow_ids), tuple(shadow_ids),
                          len(set(real_ids).intersection(shadow_ids)))
    return replace(outcome, shadow=result)


def _rank_with(profile: Profile, batch: Batch, params: RankParams, layers: tuple[LayerSpec, ...],
               ctx: ScoringContext, last: bool = True) -> RankOutcome:
    """One profile's outcome; ``last``: no profile is scored after this one (its text indexes may go)."""
    scores = score(batch, ctx, profile)
    if last and not reads_text(batch, profile.diversity_lambda):
        release_indexes(batch)  # read by scoring only: they go before the similarity's matrix is made
    layer_of = assign_layers(batch, layers)
    tokens, estimated = estimate_tokens(batch)
    drop = scores.gate.astype(np.int8, copy=True)
    notes: dict[int, tuple[str, ...]] = {}  # drop notes written after scoring; else the gate's reasons
    logs: list[StagePass] = []
    gated_in = drop == 0  # ``drop`` is not written before the min-score gate: one mask for the stages and the gate
    fused = fusion_log(batch, scores, profile, gated_in)
    if fused is not None:
        logs.append(fused)
    current = scores.combined.copy()
    for log in blend_stage_scores(batch, profile, current, gated_in):
        logs.append(log)
        current = log.output
    min_score = profile.min_score if params.min_score is None else params.min_score
    layer_min = {layer.name: layer.min_score for layer in layers if layer.min_score is not None}
    for i, note in min_score_gate(min_score, layer_min, layer_of, current, gated_in).items():
        drop[i] = DropReason.BELOW_MIN_SCORE
        notes[i] = (note,)
    eligible_after_gates = drop == 0

    order = tie_order(current, batch.event_time, batch.ingested_at, batch.ids)
    tie_rank = np.empty(batch.n, dtype=np.int64)
    tie_rank[order] = np.arange(batch.n)
    sel = select(batch, Pool(layer_of, tokens, current, order, eligible_after_gates),
                 SelectParams(layers, params.max_tokens, params.max_items, profile.diversity_lambda,
                              profile.dedupe_threshold))
    rest, rest_reason, rest_cover = sel.rest, sel.rest_reason, sel.rest_cover
    covered_by = np.empty(batch.n, dtype=np.int64)
    covered_by.fill(-1)
    drop[rest] = rest_reason
    covered_by[rest] = rest_cover
    rest_at: dict[int, int] = {}  # filled when a note is first read: most responses read none of them

    def note_of(i: int) -> tuple[str, ...]:
        if i in notes:
            return notes[i]
        if not rest_at:
            rest_at.update(zip(rest.tolist(), range(rest.size), strict=True))
        k = rest_at.get(i)
        if k is not None:
            return (selection_note(int(rest_reason[k]), int(rest_cover[k]), batch, int(tokens[i])),)
        return scores.gate_reasons[i]

    diversity = sel.similarity != "none"
    final = current.copy()
    picked = sel.picked
    if diversity and picked.size:
        final[picked] = sel.gain[picked]
        mask = np.zeros(batch.n, dtype=bool)
        mask[picked] = True
        logs.append(StagePass("diversity", f"MMR covering set, lambda {profile.diversity_lambda:g}, "
                             f"similarity {sel.similarity}", "memrank", current, final, mask))
    ranked = picked[np.lexsort((tie_rank[picked], -final[picked]))] if picked.size else picked
    buckets = calibrate(final[ranked])
    placement = params.placement if params.placement != Placement.UNSPECIFIED else profile.placement
    imp = scores.importance_of(ranked)
    return RankOutcome(
        profile=profile, scores=scores, layer_of=layer_of, token_count=tokens, token_estimated=estimated,
        final=final, drop=drop, drop_notes=Lazy(batch.n, note_of), ranked=ranked,
        positions=placement_positions(len(ranked), placement), public_score=buckets.score,
        stages=_stage_records(logs, ranked, final, buckets.score, eligible_after_gates, tie_rank),
        allocations=sel.allocations,
        suggestions=tuple(zip(ranked.tolist(), (imp + (1.0 - imp) * IMPORTANCE_RAISE).tolist(), strict=True)),
        covered_by=covered_by, gain=sel.gain, bucket_lower=buckets.lower, bucket_upper=buckets.upper,
        similarity=sel.similarity,
    )


def _stage_records(logs: list[StagePass], ranked: np.ndarray, final: np.ndarray, public: np.ndarray,
                   eligible: np.ndarray, tie_rank: np.ndarray) -> tuple[tuple[StageRecord, ...], ...]:
    """Per ranked memory: one record per stage (position = rank in the stage's population), then calibration."""
    positions = []
    for log in logs:
        idx = (eligible if log.population is None else log.population).nonzero()[0]
        order = idx[np.lexsort((tie_rank[idx], -log.output[idx]))]
        pos = np.empty(len(log.output), dtype=np.int64)
        pos[order] = np.arange(order.size)
        positions.append(pos)
    # Each stage's numbers of the ranked memories as Python lists (one conversion per column, not per number).
    columns = [(log, log.input[ranked].tolist(), pos[ranked].tolist(), log.output[ranked].tolist())
               for log, pos in zip(logs, positions, strict=True)]
    out = []
    for r, (prior, shown) in enumerate(zip(final[ranked].tolist(), public.tolist(), strict=True)):
        recs = [StageRecord(log.stage, log.objective, log.provenance, ins[r], at[r], outs[r])
                for log, ins, at, outs in columns]
        recs.append(StageRecord("calibration", "non-overlapping score bucket per rank position",
                                CALIBRATION_SCHEME, prior, r, shown))
        out.append(tuple(recs))
    return tuple(out)

