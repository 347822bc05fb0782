"""The ranking pipeline: score -> gates -> select -> order. Pure: no I/O, no clock."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from memrank.core.batch import Batch, LayerSpec, RankParams
from memrank.core.errors import FieldViolation, InvalidRequest, UnknownProfile
from memrank.core.order import placement_positions, tie_order
from memrank.core.outcome import Allocation, RankOutcome
from memrank.core.score import score
from memrank.core.scores import ScoringContext
from memrank.core.types import DropReason, Placement
from memrank.profiles.model import Profile

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
    chars = np.fromiter((len(c) for c in batch.contents), dtype=np.int64, count=batch.n)
    return np.where(estimated, (chars + 3) // 4, batch.token_count), estimated


def assign_layers(batch: Batch, layers: tuple[LayerSpec, ...]) -> tuple[str, ...]:
    """Each candidate's layer, or the catch-all when its layer has no policy."""
    names = {layer.name for layer in layers}
    return tuple(name if name in names else CATCH_ALL_LAYER for name in batch.layers)


def rank(
    batch: Batch,
    params: RankParams,
    profiles: Mapping[str, Profile],
    default_layers: tuple[LayerSpec, ...] = (),
    provenance_key: bytes | None = None,
) -> RankOutcome:
    """Rank one batch: every candidate ends selected or dropped with a reason."""
    profile = apply_overrides(resolve_profile(profiles, params.profile), params.weight_overrides)
    ctx = ScoringContext(params.query, params.reference_time, params.explicit_lookup, provenance_key)
    scores = score(batch, ctx, profile)
    layers = params.layers or default_layers
    layer_of = assign_layers(batch, layers)
    tokens, estimated = estimate_tokens(batch)
    final = scores.combined.copy()
    drop = scores.gate.astype(np.int8, copy=True)
    notes: list[tuple[str, ...]] = list(scores.gate_reasons)

    min_score = profile.min_score if params.min_score is None else params.min_score
    layer_min = {layer.name: layer.min_score for layer in layers if layer.min_score is not None}
    for i in np.flatnonzero(drop == 0):
        bar = max(min_score, layer_min.get(layer_of[i], 0.0))
        if final[i] < bar:
            drop[i] = DropReason.BELOW_MIN_SCORE
            notes[i] = (f"final score {final[i]:.6g} below minimum {bar:.6g}",)

    order = [int(i) for i in tie_order(final, batch.event_time, batch.ingested_at, batch.ids) if drop[i] == 0]
    ranked = _fit_limits(order, params, layers, layer_of, tokens, drop, notes)
    placement = params.placement if params.placement != Placement.UNSPECIFIED else profile.placement
    ranked_arr = np.array(ranked, dtype=np.int64)
    imp = scores.importance[ranked_arr]
    return RankOutcome(
        profile=profile, scores=scores, layer_of=layer_of, token_count=tokens, token_estimated=estimated,
        final=final, drop=drop, drop_notes=tuple(notes), ranked=ranked_arr,
        positions=placement_positions(len(ranked), placement), public_score=final[ranked_arr],
        stages=tuple(() for _ in ranked),
        allocations=_allocations(layers, layer_of, tokens, drop, params.max_tokens),
        suggestions=tuple(zip(ranked, (imp + (1.0 - imp) * IMPORTANCE_RAISE).tolist(), strict=True)),
    )


def _fit_limits(
    order: list[int], params: RankParams, layers: tuple[LayerSpec, ...], layer_of: tuple[str, ...],
    tokens: np.ndarray, drop: np.ndarray, notes: list[tuple[str, ...]],
) -> list[int]:
    """Greedy fill in rank order under max_items (global, per layer) and the token cap."""
    layer_cap = {layer.name: layer.max_items for layer in layers if layer.max_items}
    per_layer: dict[str, int] = {}
    used = 0
    kept: list[int] = []
    for i in order:
        layer = layer_of[i]
        if params.max_items and len(kept) >= params.max_items:
            drop[i], notes[i] = DropReason.MAX_ITEMS, (f"budget.max_items {params.max_items} reached",)
        elif layer in layer_cap and per_layer.get(layer, 0) >= layer_cap[layer]:
            drop[i], notes[i] = DropReason.MAX_ITEMS, (f"layer {layer!r} max_items {layer_cap[layer]} reached",)
        elif params.max_tokens and used + int(tokens[i]) > params.max_tokens:
            drop[i], notes[i] = DropReason.OVER_BUDGET, (
                f"{int(tokens[i])} tokens do not fit: {used} of {params.max_tokens} used",)
        else:
            kept.append(i)
            used += int(tokens[i])
            per_layer[layer] = per_layer.get(layer, 0) + 1
    return kept


def _allocations(
    layers: tuple[LayerSpec, ...], layer_of: tuple[str, ...], tokens: np.ndarray, drop: np.ndarray, max_tokens: int,
) -> tuple[Allocation, ...]:
    """One allocation per layer policy, plus the catch-all when it holds candidates."""
    names = [layer.name for layer in layers]
    if CATCH_ALL_LAYER in layer_of and CATCH_ALL_LAYER not in names:
        names.append(CATCH_ALL_LAYER)
    floors = {layer.name: layer.floor_tokens for layer in layers}
    of = np.array(layer_of, dtype=object)
    out = []
    for name in names:
        mask = of == name if len(of) else np.zeros(0, dtype=bool)
        sel = mask & (drop == 0)
        out.append(Allocation(
            layer=name, budget_tokens=max_tokens, used_tokens=int(tokens[sel].sum()),
            floor_tokens=floors.get(name, 0), candidate_count=int(mask.sum()), selected_count=int(sel.sum()),
        ))
    return tuple(out)
