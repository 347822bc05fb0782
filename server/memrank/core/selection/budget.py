"""Token allocation across layers: floors first, then shares of the rest, then release.

Rules (documented in the README):

- Floors are reserved first. If they add up to more than ``max_tokens`` they
  are scaled down in proportion (rounded down).
- The rest is split by share (relative weights). All shares 0: split equally.
  Integer tokens are assigned by the largest-remainder method, ties to the
  earlier layer, so the allocations always add up to at most ``max_tokens``.
- The catch-all layer (candidates whose layer has no policy) has floor 0 and
  the mean share of the policies (1 when there are none).
- Release: a layer that dropped nothing for budget cannot use the rest of its
  allocation; the remainder goes to the layers that did drop for budget, in
  proportion to their shares, and selection runs again (at most
  ``MAX_ROUNDS`` rounds).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

MAX_ROUNDS = 4


HUGE_SHARE = 1e150


@dataclass(frozen=True)
class Allocation:
    """How one layer's budget was used."""

    layer: str
    budget_tokens: int
    used_tokens: int
    floor_tokens: int
    candidate_count: int
    selected_count: int
    released_tokens: int = 0
    received_tokens: int = 0


@dataclass(frozen=True)
class LayerBudget:
    """One layer as the allocator sees it."""

    name: str
    share: float
    floor: int


def _largest_remainder(total: int, weights: Sequence[float]) -> list[int]:
    """Split ``total`` integer tokens by weights; the sum is exactly ``total`` (weights > 0 somewhere)."""
    top = max(weights, default=0.0)
    if top > HUGE_SHARE:  # shares are relative: rescale so their sum and total x share stay finite
        weights = [w / top for w in weights]
    s = math.fsum(weights)
    if total <= 0 or not weights:
        return [0] * len(weights)
    if s <= 0:
        weights, s = [1.0] * len(weights), float(len(weights))
    exact = [total * w / s for w in weights]
    out = [math.floor(x) for x in exact]
    left = total - sum(out)
    order = sorted(range(len(weights)), key=lambda i: (-(exact[i] - out[i]), i))
    for i in order[:left]:
        out[i] += 1
    return out


def allocate(layers: Sequence[LayerBudget], max_tokens: int) -> list[int]:
    """Initial token allocation per layer (floors, then shares of the rest)."""
    floors = [layer.floor for layer in layers]
    if sum(floors) > max_tokens:
        floors = [math.floor(max_tokens * f / sum(floors)) for f in floors]
    rest = _largest_remainder(max_tokens - sum(floors), [layer.share for layer in layers])
    return [f + r for f, r in zip(floors, rest, strict=True)]


def release(
    layers: Sequence[LayerBudget], alloc: Sequence[int], used: Sequence[int], starved: Sequence[bool]
) -> tuple[list[int], list[int], list[int]]:
    """Move unused tokens of layers that cannot use them to the starved layers.

    Returns (new allocation, released per layer, received per layer); nothing
    moves when no layer is starved or nothing is unused.
    """
    released = [0 if starved[i] else alloc[i] - used[i] for i in range(len(layers))]
    pool = sum(released)
    takers = [i for i in range(len(layers)) if starved[i]]
    if pool <= 0 or not takers:
        return list(alloc), [0] * len(layers), [0] * len(layers)
    split = _largest_remainder(pool, [layers[i].share for i in takers])
    received = [0] * len(layers)
    for i, extra in zip(takers, split, strict=True):
        received[i] = extra
    new = [alloc[i] - released[i] + received[i] for i in range(len(layers))]
    return new, released, received
