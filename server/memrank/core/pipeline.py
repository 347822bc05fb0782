"""The ranking pipeline: score -> gates -> stages -> select per layer -> calibrate -> order. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from memrank.core import budget
from memrank.core.batch import Batch, LayerSpec, RankParams
from memrank.core.calibrate import SCHEME as CALIBRATION_SCHEME
from memrank.core.calibrate import calibrate
from memrank.core.errors import FieldViolation, InvalidRequest, UnknownProfile
from memrank.core.order import placement_positions, tie_order
from memrank.core.outcome import Allocation, RankOutcome, ShadowResult, Stage
from memrank.core.profile import Profile
from memrank.core.reasons import Lazy
from memrank.core.score import score
from memrank.core.scores import ScoringContext
from memrank.core.select import NO_CAP, Limits, SelectState, classify_rest, run_phase
from memrank.core.shadow import kendall_tau_b, overlap_at_k
from memrank.core.similarity import Similarity
from memrank.core.stages import StageLog, blend_stage_scores, fusion_log
from memrank.core.types import DropReason, Placement

CATCH_ALL_LAYER = "other"
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
    """Token counts: the caller's, else ceil(characters / 4), with a flag where estimated."""
    estimated = batch.token_count == 0
    chars = np.fromiter(map(len, batch.contents), dtype=np.int64, count=batch.n)
    return np.where(estimated, (chars + 3) // 4, batch.token_count), estimated


def assign_layers(batch: Batch, layers: tuple[LayerSpec, ...]) -> tuple[str, ...]:
    """Each candidate's layer, or the catch-all when its layer has no policy."""
    names = {layer.name for layer in layers}
    of = {name: name if name in names else CATCH_ALL_LAYER for name in set(batch.layers)}
    return tuple(map(of.__getitem__, batch.layers))


def _request_threshold(profile: Profile, params: RankParams) -> Profile:
    """The profile with the request's relevance threshold, when the request sets one."""
    if params.relevance_threshold is None:
        return profile
    return replace(profile, relevance_threshold=params.relevance_threshold)


def rank(
    batch: Batch,
    params: RankParams,
    profiles: Mapping[str, Profile],
    default_layers: tuple[LayerSpec, ...] = (),
    provenance_key: bytes | None = None,
) -> RankOutcome:
    """Rank one batch: every candidate ends selected or dropped with a reason."""
    profile = _request_threshold(apply_overrides(resolve_profile(profiles, params.profile), params.weight_overrides),
                                 params)
    outcome = _rank_with(profile, batch, params, params.layers or default_layers, provenance_key)
    if not params.shadow_profile:
        return outcome
    shadow_profile = _request_threshold(resolve_profile(profiles, params.shadow_profile, "shadow_profile"), params)
    shadow = _rank_with(shadow_profile, batch, params, params.layers or default_layers, provenance_key)
    real_ids = [batch.ids[i] for i in outcome.ranked]
    shadow_ids = [batch.ids[i] for i in shadow.ranked]
    k, overlap = overlap_at_k(real_ids, shadow_ids)
    result = ShadowResult(shadow_profile.name, k, overlap, kendall_tau_b(real_ids, shadow_ids), tuple(shadow_ids))
    return replace(outcome, shadow=result)


def _min_score_gate(profile: Profile, params: RankParams, layers: tuple[LayerSpec, ...], layer_of: tuple[str, ...],
                    current: np.ndarray, drop: np.ndarray, notes: dict[int, tuple[str, ...]]) -> None:
    min_score = profile.min_score if params.min_score is None else params.min_score
    layer_min = {layer.name: layer.min_score for layer in layers if layer.min_score is not None}
    # Column at a time: the bar of each candidate, then one comparison (same values as max() per candidate).
    bar_of = {name: max(min_score, layer_min.get(name, 0.0) or 0.0) for name in set(layer_of)}
    bars = np.fromiter(map(bar_of.__getitem__, layer_of), dtype=np.float64, count=len(layer_of))
    # A bar of 0 is no minimum (the proto's "0 = none"): agent-observer's negative scores (a negative
    # retrieval_score, as Go's scoreMemory takes it) are ranked, not dropped.
    for i in np.flatnonzero((drop == 0) & (bars > 0.0) & (current < bars)).tolist():
        drop[i] = DropReason.BELOW_MIN_SCORE
        notes[i] = (f"score {current[i]:.6g} below the minimum {bars[i]:.6g}",)


def _rank_with(profile: Profile, batch: Batch, params: RankParams, layers: tuple[LayerSpec, ...],
               provenance_key: bytes | None) -> RankOutcome:
    ctx = ScoringContext(params.query, params.reference_time, params.explicit_lookup, provenance_key)
    scores = score(batch, ctx, profile)
    layer_of = assign_layers(batch, layers)
    tokens, estimated = estimate_tokens(batch)
    drop = scores.gate.astype(np.int8, copy=True)
    notes: dict[int, tuple[str, ...]] = {}  # drop notes written after scoring; else the gate's reasons
    logs: list[StageLog] = []
    fused = fusion_log(batch, scores, profile, drop == 0)
    if fused is not None:
        logs.append(fused)
    current = scores.combined.copy()
    for log in blend_stage_scores(batch, profile, current, drop == 0):
        logs.append(log)
        current = log.output
    _min_score_gate(profile, params, layers, layer_of, current, drop, notes)
    eligible_after_gates = drop == 0

    tie_rank = np.empty(batch.n, dtype=np.int64)
    tie_rank[tie_order(current, batch.event_time, batch.ingested_at, batch.ids)] = np.arange(batch.n)
    sel = _select(profile, batch, params, layers, layer_of, tokens, current, tie_rank, drop)
    state, rest, rest_reason, rest_cover, allocations, sim_kind = sel
    covered_by = np.full(batch.n, -1, dtype=np.int64)
    drop[rest] = rest_reason
    covered_by[rest] = rest_cover
    rest_at = {i: k for k, i in enumerate(rest.tolist())}

    def drop_note(i: int) -> tuple[str, ...]:
        if i in notes:
            return notes[i]
        k = rest_at.get(i)
        if k is not None:
            return (_drop_note(int(rest_reason[k]), int(rest_cover[k]), batch, int(tokens[i])),)
        return scores.gate_reasons[i]

    diversity = sim_kind != "none"
    final = current.copy()
    picked = np.array(state.picked, dtype=np.int64)
    if diversity and picked.size:
        final[picked] = state.gain[picked]
        mask = np.zeros(batch.n, dtype=bool)
        mask[picked] = True
        logs.append(StageLog("diversity", f"MMR covering set, lambda {profile.diversity_lambda:g}, "
                             f"similarity {sim_kind}", "memrank", current, final, mask))
    ranked = picked[np.lexsort((tie_rank[picked], -final[picked]))] if picked.size else picked
    buckets = calibrate(final[ranked])
    placement = params.placement if params.placement != Placement.UNSPECIFIED else profile.placement
    imp = scores.importance_of(ranked)
    return RankOutcome(
        profile=profile, scores=scores, layer_of=layer_of, token_count=tokens, token_estimated=estimated,
        final=final, drop=drop, drop_notes=Lazy(batch.n, drop_note), ranked=ranked,
        positions=placement_positions(len(ranked), placement), public_score=buckets.score,
        stages=_stage_records(logs, ranked, final, buckets.score, eligible_after_gates, tie_rank),
        allocations=allocations,
        suggestions=tuple(zip(ranked.tolist(), (imp + (1.0 - imp) * IMPORTANCE_RAISE).tolist(), strict=True)),
        covered_by=covered_by, gain=state.gain, bucket_lower=buckets.lower, bucket_upper=buckets.upper,
        similarity=sim_kind,
    )


def _drop_note(reason: int, cover: int, batch: Batch, tokens: int) -> str:
    if reason == DropReason.REDUNDANT:
        return f"near-duplicate of selected memory {batch.ids[cover]!r}"
    if reason == DropReason.MAX_ITEMS:
        return "item limit reached (budget.max_items or the layer's max_items)"
    return f"{tokens} tokens do not fit the layer's remaining budget"


def _select(profile: Profile, batch: Batch, params: RankParams, layers: tuple[LayerSpec, ...],
            layer_of: tuple[str, ...], tokens: np.ndarray, current: np.ndarray, tie_rank: np.ndarray,
            drop: np.ndarray) -> tuple[SelectState, np.ndarray, np.ndarray, np.ndarray, tuple[Allocation, ...], str]:
    """Greedy selection with floors, allocations and release rounds."""
    names = [layer.name for layer in layers]
    if CATCH_ALL_LAYER in layer_of and CATCH_ALL_LAYER not in names:
        shares = [layer.share for layer in layers]
        with np.errstate(over="ignore"):  # shares near DBL_MAX: the mean overflows (shares are relative)
            mean = float(np.mean(shares)) if shares else 1.0
        catch_all = LayerSpec(CATCH_ALL_LAYER, share=mean if np.isfinite(mean) else max(shares))
        layers = (*layers, catch_all)
        names.append(CATCH_ALL_LAYER)
    index = {name: k for k, name in enumerate(names)}
    layer = np.fromiter(map(index.__getitem__, layer_of), dtype=np.int64, count=len(layer_of))
    eligible = drop == 0
    lam = profile.diversity_lambda
    sim = Similarity(batch) if lam < 1.0 and eligible.any() else None
    sim_kind = sim.kind if sim is not None else "none"
    items = np.array([layer_spec.max_items or NO_CAP for layer_spec in layers], dtype=np.int64)
    specs = [budget.LayerBudget(x.name, x.share, x.floor_tokens) for x in layers]
    alloc = budget.allocate(specs, params.max_tokens) if params.max_tokens else [NO_CAP] * len(layers)
    released_total = [0] * len(layers)
    received_total = [0] * len(layers)
    for _ in range(budget.MAX_ROUNDS):
        state = SelectState(batch.n, len(layers))
        lim = Limits(np.array(alloc, dtype=np.int64), items, params.max_items)
        pool = eligible.copy()
        floors = np.array([min(x.floor_tokens, a) for x, a in zip(layers, alloc, strict=True)], dtype=np.int64)
        if params.max_tokens and floors.any():
            # Floors first: a floored layer's best memories are picked before anyone else can crowd it out.
            floor_pool = pool & (floors[layer] > 0)
            run_phase(state, floor_pool, current, tie_rank, layer, tokens, replace(lim, layer_tokens=floors),
                      sim, lam, profile.dedupe_threshold)
            pool[state.picked] = False
        run_phase(state, pool, current, tie_rank, layer, tokens, lim, sim, lam, profile.dedupe_threshold)
        rest = np.flatnonzero(pool)
        reason, cover = classify_rest(state, rest, layer, tokens, lim, profile.dedupe_threshold, sim is not None)
        if not params.max_tokens:
            break
        starved = [bool(((reason == DropReason.OVER_BUDGET) & (layer[rest] == k)).any()) for k in range(len(layers))]
        new_alloc, released, received = budget.release(specs, alloc, state.used_tokens.tolist(), starved)
        if not any(received):
            break
        released_total = [a + b for a, b in zip(released_total, released, strict=True)]
        received_total = [a + b for a, b in zip(received_total, received, strict=True)]
        alloc = new_alloc
    allocations = tuple(
        Allocation(
            layer=x.name, budget_tokens=0 if not params.max_tokens else int(alloc[k]),
            used_tokens=int(state.used_tokens[k]), floor_tokens=x.floor_tokens,
            candidate_count=int((layer == k).sum()), selected_count=int(state.used_items[k]),
            released_tokens=released_total[k], received_tokens=received_total[k],
        )
        for k, x in enumerate(layers)
    )
    return state, rest, reason, cover, allocations, sim_kind


def _stage_records(logs: list[StageLog], ranked: np.ndarray, final: np.ndarray, public: np.ndarray,
                   eligible: np.ndarray, tie_rank: np.ndarray) -> tuple[tuple[Stage, ...], ...]:
    """Per ranked memory: one record per stage (position = rank in the stage's population), then calibration."""
    positions = []
    for log in logs:
        idx = np.flatnonzero(eligible if log.population is None else log.population)
        order = idx[np.lexsort((tie_rank[idx], -log.output[idx]))]
        pos = np.empty(len(log.output), dtype=np.int64)
        pos[order] = np.arange(order.size)
        positions.append(pos)
    out = []
    for r, i in enumerate(ranked.tolist()):
        recs = [Stage(log.stage, log.objective, log.provenance, float(log.input[i]), int(pos[i]),
                      float(log.output[i])) for log, pos in zip(logs, positions, strict=True)]
        recs.append(Stage("calibration", "non-overlapping score bucket per rank position", CALIBRATION_SCHEME,
                          float(final[i]), r, float(public[r])))
        out.append(tuple(recs))
    return tuple(out)

