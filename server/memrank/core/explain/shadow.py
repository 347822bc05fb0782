"""Shadow comparison of two selections: overlap@k and Kendall tau-b."""

from __future__ import annotations

import math
from collections.abc import Sequence


def overlap_at_k(real: Sequence[str], shadow: Sequence[str]) -> tuple[int, float]:
    """k = len(real); |top-k(real) ∩ top-k(shadow)| / k (1.0 when both are empty, 0.0 when only real is)."""
    k = len(real)
    if k == 0:
        return 0, 1.0 if not shadow else 0.0
    return k, len(set(real[:k]) & set(shadow[:k])) / k


def kendall_tau_b(real: Sequence[str], shadow: Sequence[str]) -> float:
    """Kendall tau-b of the two rank orders over their common ids (1.0 with fewer than two in common)."""
    pos_a = {x: i for i, x in enumerate(real)}
    pos_b = {x: i for i, x in enumerate(shadow)}
    common = [x for x in real if x in pos_b]
    if len(common) < 2:
        return 1.0
    concordant = discordant = 0
    for i, x in enumerate(common):
        for y in common[i + 1:]:
            s = (pos_a[x] - pos_a[y]) * (pos_b[x] - pos_b[y])
            concordant += s > 0
            discordant += s < 0
    # Ranks are positions, so there are no ties and tau-b equals tau-a here.
    pairs = concordant + discordant
    return (concordant - discordant) / math.sqrt(pairs * pairs) if pairs else 1.0
