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
_NONE = np.iinfo(np.int64).min  # no token count is at most this
_OVER_BUDGET = int(DropReason.OVER_BUDGET)  # a plain int: numpy converts an IntEnum fill value slowly


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
        self.gain = np.empty(self.n)
        self.gain.fill(np.nan)
        self.max_sim = np.zeros(self.n)
        self.cover = np.empty(self.n, dtype=np.int64)
        self.cover.fill(-1)
        self.used_tokens = np.zeros(self.n_layers, dtype=np.int64)
        self.used_items = np.zeros(self.n_layers, dtype=np.int64)


@dataclass(frozen=True)
class Candidates:
    """What every phase of one selection reads of the candidates, and the diversity settings."""

    score: np.ndarray  # float64: the score after every stage
    tie_order: np.ndarray  # int64: the candidates in tie order (a permutation)
    layer: np.ndarray  # int64: the layer's index
    tokens: np.ndarray  # int64
    sim: Similarity | None  # None: no diversity pass
    lam: float  # MMR's lambda (1.0 = no diversity)
    dedupe: float  # similarity at or above which a candidate is a near-duplicate of a pick

    @property
    def diversity(self) -> bool:
        """Whether picks are weighed against their similarity to earlier picks (MMR)."""
        return self.lam < 1.0 and self.sim is not None


@dataclass(frozen=True)
class Caps:
    """Caps of one selection phase."""

    layer_tokens: np.ndarray  # int64 per layer (NO_CAP = none)
    layer_items: np.ndarray  # int64 per layer (NO_CAP = none)
    max_items: int  # 0 = none


def _scan(state: SelectState, pool: np.ndarray, c: Candidates, caps: Caps) -> None:
    """Without diversity: take the pool in tie order, each candidate that still fits (gain = its score).

    The room left per layer is kept in Python ints (exact, as the int64 counts): a pass costs a few
    operations per candidate instead of a handful of numpy calls each.
    """
    cand = c.tie_order[pool[c.tie_order]]
    room_tokens = (caps.layer_tokens - state.used_tokens).tolist()
    room_items = (caps.layer_items - state.used_items).tolist()
    left = caps.max_items - len(state.picked) if caps.max_items else cand.size
    taken: list[int] = []
    for i, k, t in zip(cand.tolist(), c.layer[cand].tolist(), c.tokens[cand].tolist(), strict=True):
        if len(taken) >= left:
            break
        if t <= room_tokens[k] and room_items[k] > 0:
            room_tokens[k] -= t
            room_items[k] -= 1
            taken.append(i)
    picks = np.array(taken, dtype=np.int64)
    state.picked.extend(taken)
    state.gain[picks] = c.score[picks]
    state.used_tokens[:] = caps.layer_tokens - np.array(room_tokens, dtype=np.int64)
    state.used_items[:] = caps.layer_items - np.array(room_items, dtype=np.int64)
    pool[picks] = False


def run_phase(state: SelectState, pool: np.ndarray, c: Candidates, caps: Caps) -> None:
    """Pick from ``pool`` (bool mask of undecided eligible candidates) until nothing fits; updates state."""
    sim = c.sim
    if sim is None or not c.diversity:
        _scan(state, pool, c, caps)
        return
    # The candidates in tie order, so the first of equal gains (``argmax``) is the tie rule's pick.
    cand = c.tie_order[pool[c.tie_order]]
    c_layer, c_tokens, c_sim = c.layer[cand], c.tokens[cand], state.max_sim[cand]
    # Within a phase the room left in a layer only shrinks and max_sim only grows, so a candidate that is a
    # near-duplicate or does not fit now never will: its weighted score becomes -inf for the rest of the phase
    # (scores are finite, so a gain of -inf is a candidate out of the running).
    weighted = c.lam * c.score[cand]
    penalty, dedupe = 1.0 - c.lam, c.dedupe
    # The tokens each layer still takes; none (below any count) once its item cap is reached. The counts are
    # kept in Python ints (exact, as the int64 ones) and written back once, as ``_scan`` does.
    room = np.where(caps.layer_items > state.used_items, caps.layer_tokens - state.used_tokens, _NONE)
    used_tokens, used_items = state.used_tokens.tolist(), state.used_items.tolist()
    layer_tokens, layer_items = caps.layer_tokens.tolist(), caps.layer_items.tolist()
    picks: list[int] = []
    gains: list[float] = []
    left = min(caps.max_items - len(state.picked), cand.size) if caps.max_items else cand.size
    while len(picks) < left:
        weighted[(c_sim >= dedupe) | (c_tokens > room[c_layer])] = -np.inf
        gain = weighted - penalty * c_sim
        last = int(gain.argmax())
        best = float(gain[last])
        if best == -np.inf:
            break
        i, k = int(cand[last]), int(c_layer[last])
        weighted[last] = -np.inf
        picks.append(i)
        gains.append(best)
        used_tokens[k] += int(c_tokens[last])
        used_items[k] += 1
        room[k] = layer_tokens[k] - used_tokens[k] if layer_items[k] > used_items[k] else _NONE
        row = sim.row(i)
        state.cover[row > state.max_sim] = i
        np.maximum(state.max_sim, row, out=state.max_sim)
        c_sim = state.max_sim[cand]
    state.picked.extend(picks)
    state.gain[picks] = gains
    state.used_tokens[:] = used_tokens
    state.used_items[:] = used_items
    pool[picks] = False


def classify_rest(state: SelectState, rest: np.ndarray, c: Candidates, caps: Caps) -> tuple[np.ndarray, np.ndarray]:
    """Drop reason (int8) and covering pick (-1 = none) for each candidate index in ``rest``."""
    reason = np.empty(rest.size, dtype=np.int8)
    reason.fill(_OVER_BUDGET)
    cover = np.empty(rest.size, dtype=np.int64)
    cover.fill(-1)
    if rest.size == 0:
        return reason, cover
    li = c.layer[rest]
    items_full = (caps.layer_items[li] - state.used_items[li]) <= 0
    if caps.max_items and len(state.picked) >= caps.max_items:
        items_full[:] = True
    reason[items_full] = DropReason.MAX_ITEMS
    if c.sim is not None:
        redundant = state.max_sim[rest] >= c.dedupe
        reason[redundant] = DropReason.REDUNDANT
        cover[redundant] = state.cover[rest][redundant]
    return reason, cover
