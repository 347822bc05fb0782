"""Greedy covering-set selection under per-layer caps (MMR when diversity is on).

Each step picks, among the eligible candidates that still fit (their layer
has tokens and item room left, the global item guard is not reached, and
they are not near-duplicates of a pick), the one with the highest marginal
gain ``lam * score - (1 - lam) * max similarity to the picks`` (ties: the
tie rule). With ``lam = 1`` the gain is the score and the pass is a linear
scan in tie order. The loop stops when nothing fits, so it costs O(n * k)
for k picks; whatever was never picked is then classified in bulk:
REDUNDANT (similarity >= dedupe to a pick, naming it), MAX_ITEMS, or
OVER_BUDGET.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from memrank.core.selection.similarity import Similarity
from memrank.core.types import DropReason

NO_CAP = np.iinfo(np.int64).max


@dataclass
class SelectState:
    """Mutable state of one selection run (local to the pure function that owns it)."""

    n: int
    n_layers: int
    picked: list[int] = field(default_factory=list)
    gain: np.ndarray = field(init=False)
    max_sim: np.ndarray = field(init=False)
    cover: np.ndarray = field(init=False)
    used_tokens: np.ndarray = field(init=False)
    used_items: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.gain = np.full(self.n, np.nan)
        self.max_sim = np.zeros(self.n)
        self.cover = np.full(self.n, -1, dtype=np.int64)
        self.used_tokens = np.zeros(self.n_layers, dtype=np.int64)
        self.used_items = np.zeros(self.n_layers, dtype=np.int64)


@dataclass(frozen=True)
class Caps:
    """Caps of one selection phase."""

    layer_tokens: np.ndarray  # int64 per layer (NO_CAP = none)
    layer_items: np.ndarray  # int64 per layer (NO_CAP = none)
    max_items: int  # 0 = none


def _fits(state: SelectState, cand: np.ndarray, layer: np.ndarray, tokens: np.ndarray, caps: Caps) -> np.ndarray:
    li = layer[cand]
    room_tokens = caps.layer_tokens[li] - state.used_tokens[li]
    room_items = caps.layer_items[li] - state.used_items[li]
    fits: np.ndarray = (tokens[cand] <= room_tokens) & (room_items > 0)
    return fits


def _take(state: SelectState, i: int, g: float, layer: np.ndarray, tokens: np.ndarray, sim: Similarity | None,
          diversity: bool) -> None:
    state.picked.append(i)
    state.gain[i] = g
    state.used_tokens[layer[i]] += tokens[i]
    state.used_items[layer[i]] += 1
    if diversity and sim is not None:
        row = sim.row(i)
        state.cover[row > state.max_sim] = i
        np.maximum(state.max_sim, row, out=state.max_sim)


def run_phase(
    state: SelectState, pool: np.ndarray, score: np.ndarray, tie_rank: np.ndarray, layer: np.ndarray,
    tokens: np.ndarray, caps: Caps, sim: Similarity | None, lam: float, dedupe: float,
) -> None:
    """Pick from ``pool`` (bool mask of undecided eligible candidates) until nothing fits; updates state."""
    diversity = lam < 1.0 and sim is not None
    if not diversity:
        for i in np.argsort(tie_rank):  # a permutation: every sort gives the same order
            if not pool[i] or (caps.max_items and len(state.picked) >= caps.max_items):
                continue
            if _fits(state, np.array([i]), layer, tokens, caps)[0]:
                _take(state, int(i), float(score[i]), layer, tokens, sim, False)
                pool[i] = False
        return
    # Within a phase the room left in a layer only shrinks and max_sim only grows, so a candidate that is
    # a near-duplicate or does not fit now never will: the candidate list only shrinks.
    cand = np.flatnonzero(pool)
    weighted = lam * score
    while not caps.max_items or len(state.picked) < caps.max_items:
        li = layer[cand]
        room_tokens = caps.layer_tokens - state.used_tokens
        has_room = caps.layer_items > state.used_items
        cand = cand[(state.max_sim[cand] < dedupe) & (tokens[cand] <= room_tokens[li]) & has_room[li]]
        if cand.size == 0:
            return
        gain = weighted[cand] - (1.0 - lam) * state.max_sim[cand]
        best_gain = gain.max()
        ties = np.flatnonzero(gain == best_gain)
        k = int(ties[np.argmin(tie_rank[cand[ties]])]) if ties.size > 1 else int(ties[0])
        i = int(cand[k])
        _take(state, i, float(best_gain), layer, tokens, sim, True)
        pool[i] = False
        cand = cand[cand != i]


def classify_rest(
    state: SelectState, rest: np.ndarray, layer: np.ndarray, tokens: np.ndarray, caps: Caps, dedupe: float,
    diversity: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Drop reason (int8) and covering pick (-1 = none) for each candidate index in ``rest``."""
    reason = np.full(rest.size, DropReason.OVER_BUDGET, dtype=np.int8)
    cover = np.full(rest.size, -1, dtype=np.int64)
    if rest.size == 0:
        return reason, cover
    li = layer[rest]
    items_full = (caps.layer_items[li] - state.used_items[li]) <= 0
    if caps.max_items and len(state.picked) >= caps.max_items:
        items_full[:] = True
    reason[items_full] = DropReason.MAX_ITEMS
    if diversity:
        redundant = state.max_sim[rest] >= dedupe
        reason[redundant] = DropReason.REDUNDANT
        cover[redundant] = state.cover[rest][redundant]
    return reason, cover
