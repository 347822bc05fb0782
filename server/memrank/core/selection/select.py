"""Selection over layers: the covering set under each layer's budget, floors first, then release rounds.

In: the scores after every stage, the tie ranks, each candidate's layer and tokens, and which candidates the
gates kept; out: a ``Selection`` — the picks in pick order, each pick's gain, why every other eligible
candidate was not picked, and how each layer's budget was used.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memrank.core.batch import Batch, LayerSpec
from memrank.core.selection import budget
from memrank.core.selection.budget import Allocation
from memrank.core.selection.covering import NO_CAP, Candidates, Caps, SelectState, classify_rest, run_phase
from memrank.core.selection.similarity import Similarity
from memrank.core.types import DropReason

CATCH_ALL_LAYER = "other"
_OVER_BUDGET = int(DropReason.OVER_BUDGET)  # a plain int: numpy compares with an IntEnum slowly


@dataclass(frozen=True)
class Selection:
    """What selection decided for one batch."""

    picked: np.ndarray  # int64 candidate indices in pick order
    gain: np.ndarray  # float64 per candidate: the marginal gain when picked, else NaN
    rest: np.ndarray  # int64: the eligible candidates not picked
    rest_reason: np.ndarray  # int8 per ``rest``: REDUNDANT, MAX_ITEMS or OVER_BUDGET
    rest_cover: np.ndarray  # int64 per ``rest``: the pick covering a REDUNDANT one, else -1
    allocations: tuple[Allocation, ...]
    similarity: str  # "cosine", "shingle_jaccard" or "none" (no diversity pass)


@dataclass(frozen=True)
class Pool:
    """What selection reads of each candidate (one entry per candidate of the batch)."""

    layer_of: tuple[str, ...]  # the candidate's layer name
    tokens: np.ndarray  # int64: its tokens
    score: np.ndarray  # float64: its score after every stage
    tie_order: np.ndarray  # int64: the candidates in tie order (``order.tie_order``)
    eligible: np.ndarray  # bool: kept by the gates


@dataclass(frozen=True)
class SelectParams:
    """The request's and the profile's selection settings."""

    layers: tuple[LayerSpec, ...]
    max_tokens: int  # 0 = no token budget
    max_items: int  # 0 = no item cap
    diversity_lambda: float  # 1.0 = no diversity pass
    dedupe_threshold: float


def select(batch: Batch, pool: Pool, params: SelectParams) -> Selection:
    """Greedy selection with floors, allocations and release rounds (``max_tokens`` 0 = no token budget)."""
    layers = _with_catch_all(params.layers, pool.layer_of)
    index = {layer.name: k for k, layer in enumerate(layers)}
    layer = np.fromiter(map(index.__getitem__, pool.layer_of), dtype=np.int64, count=len(pool.layer_of))
    lam, max_tokens, max_items = params.diversity_lambda, params.max_tokens, params.max_items
    sim = Similarity(batch) if lam < 1.0 and np.count_nonzero(pool.eligible) else None
    cands = Candidates(pool.score, pool.tie_order, layer, pool.tokens, sim, lam, params.dedupe_threshold)
    specs, items, first_alloc = _plan(layers, max_tokens)
    alloc = list(first_alloc)
    released_total = [0] * len(layers)
    received_total = [0] * len(layers)
    for _ in range(budget.MAX_ROUNDS):
        state = SelectState(batch.n, len(layers))
        caps = Caps(np.array(alloc, dtype=np.int64), items, max_items)
        open_ = pool.eligible.copy()
        floors = np.array([min(x.floor_tokens, a) for x, a in zip(layers, alloc, strict=True)], dtype=np.int64)
        if max_tokens and np.count_nonzero(floors):
            # Floors first: a floored layer's best memories are picked before anyone else can crowd it out.
            floor_pool = open_ & (floors[layer] > 0)
            run_phase(state, floor_pool, cands, Caps(floors, items, max_items))
            open_[state.picked] = False
        run_phase(state, open_, cands, caps)
        rest = open_.nonzero()[0]
        reason, cover = classify_rest(state, rest, cands, caps)
        if not max_tokens:
            break
        over = np.bincount(layer[rest[reason == _OVER_BUDGET]], minlength=len(layers))
        starved = (over > 0).tolist()
        new_alloc, released, received = budget.release(specs, alloc, state.used_tokens.tolist(), starved)
        if not any(received):
            break
        released_total = [a + b for a, b in zip(released_total, released, strict=True)]
        received_total = [a + b for a, b in zip(received_total, received, strict=True)]
        alloc = new_alloc
    candidates = np.bincount(layer, minlength=len(layers)).tolist()
    allocations = tuple(
        Allocation(
            layer=x.name, budget_tokens=0 if not max_tokens else int(alloc[k]),
            used_tokens=int(state.used_tokens[k]), floor_tokens=x.floor_tokens,
            candidate_count=candidates[k], selected_count=int(state.used_items[k]),
            released_tokens=released_total[k], received_tokens=received_total[k],
        )
        for k, x in enumerate(layers)
    )
    return Selection(np.array(state.picked, dtype=np.int64), state.gain, rest, reason, cover, allocations,
                     sim.kind if sim is not None else "none")


def _with_catch_all(layers: tuple[LayerSpec, ...], layer_of: tuple[str, ...]) -> tuple[LayerSpec, ...]:
    """The layers, plus the catch-all layer (the mean share) when a candidate names it and no policy does."""
    if CATCH_ALL_LAYER not in layer_of or any(layer.name == CATCH_ALL_LAYER for layer in layers):
        return layers
    shares = [layer.share for layer in layers]
    with np.errstate(over="ignore"):  # shares near DBL_MAX: the mean overflows (shares are relative)
        mean = float(np.mean(shares)) if shares else 1.0
    return (*layers, LayerSpec(CATCH_ALL_LAYER, share=mean if np.isfinite(mean) else max(shares)))


def _plan(layers: tuple[LayerSpec, ...], max_tokens: int) -> tuple[tuple[budget.LayerBudget, ...], np.ndarray,
                                                                   tuple[int, ...]]:
    """The layers as the allocator sees them, their item caps and the first allocation."""
    items = np.array([layer.max_items or NO_CAP for layer in layers], dtype=np.int64)
    specs = tuple(budget.LayerBudget(x.name, x.share, x.floor_tokens) for x in layers)
    alloc = budget.allocate(specs, max_tokens) if max_tokens else [NO_CAP] * len(layers)
    return specs, items, tuple(alloc)


def drop_note(reason: int, cover: int, batch: Batch, tokens: int) -> str:
    """Why selection did not pick a candidate (its reason, the pick covering it, its tokens)."""
    if reason == DropReason.REDUNDANT:
        return f"near-duplicate of selected memory {batch.ids[cover]!r}"
    if reason == DropReason.MAX_ITEMS:
        return "item limit reached (budget.max_items or the layer's max_items)"
    return f"{tokens} tokens do not fit the layer's remaining budget"
