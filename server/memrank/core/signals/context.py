"""Context: a memory shares a bounded part of its neighbours' evidence.

In a conversation the turn that matches a question is often next to the turn
that answers it ("Did you go?" / "Yes, last May"). A candidate's neighbours
are the population candidates of the same ``thread`` whose ``position``
differs by exactly 1 (a candidate without a position has none). Each
population candidate j has a match with the query::

    match_j = (1 - a) x minmax(relevance)_j + a x lexical_j

(``a`` = ``profile.context_lexical``, min-max over the population, both parts
in [0, 1]) and the signal is the best match among the neighbours::

    context_i = max(match_j for j in neighbours(i)), 0 without neighbours

in [0, 1]. It only helps when the neighbours are in the batch: a caller
sends its top hits plus their adjacent turns. Reasons name the neighbour.
"""

from __future__ import annotations

import numpy as np

from memrank.core.batch import Batch
from memrank.core.profile import Profile
from memrank.core.reasons import Lazy, Same
from memrank.core.signals.base import RawSignal, ScoringContext
from memrank.core.signals.lexical import lexical
from memrank.core.signals.normalizers import min_max
from memrank.core.signals.relevance import relevance


def match(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> np.ndarray:
    """Each candidate's own match with the query, in [0, 1] (0 outside the population).

    Computed once per batch, profile, query and population (``context``, ``thread`` and ``hop`` share it).
    """
    key = ("match", id(profile), ctx.query, ctx.explicit_lookup, population.tobytes())
    # The profile is kept with the value: an id is only unique among live objects.
    held: tuple[Profile, np.ndarray] = batch.memo.get(key, lambda: (profile, _frozen_match(batch, ctx, profile,
                                                                                            population)))
    return held[1] if held[0] is profile else _frozen_match(batch, ctx, profile, population)


def _frozen_match(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> np.ndarray:
    m = _match(batch, ctx, profile, population)
    m.setflags(write=False)
    return m


def _match(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> np.ndarray:
    a = profile.context_lexical
    rel = min_max(relevance(batch, ctx, profile, population).values, population)
    if a <= 0.0:
        return np.where(population, rel, 0.0)
    lex = lexical(batch, ctx, profile, population).values
    return np.where(population, (1.0 - a) * rel + a * lex, 0.0)


_TOP = float(2**53)  # positions are integers in [0, 2^53]; past it float64 cannot tell p from p + 1


def neighbours(batch: Batch, value: np.ndarray, eligible: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each candidate, the largest ``value`` among its eligible neighbours and which candidate gave it.

    Returns (best value, best candidate index), 0 and -1 where there is no neighbour.
    """
    n = batch.n
    best = np.zeros(n)
    who = np.full(n, -1, dtype=np.int64)
    placed = (~np.isnan(batch.positions)).nonzero()[0]
    if placed.size == 0 or not np.count_nonzero(eligible[placed]):
        return best, who
    thread = thread_codes(batch)[placed]
    pos = batch.positions[placed]
    m = placed.size
    # Positions and their neighbours' positions as small ranks, so (thread, rank) is one int64 key.
    _, rank = np.unique(np.concatenate([pos, pos - 1.0, pos + 1.0]), return_inverse=True)
    width = int(rank.max()) + 1
    own = thread * width + rank[:m]
    member = eligible[placed]
    keys, rows = own[member], placed[member]
    # The best member of each occupied key: sort by (key, value desc), keep the first of each key.
    order = np.lexsort((-value[rows], keys))
    keys, rows = keys[order], rows[order]
    first = np.ones(keys.size, dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    keys, rows = keys[first], rows[first]
    for part, shift in ((1, -1.0), (2, 1.0)):
        target = thread * width + rank[part * m:(part + 1) * m]
        at = np.minimum(np.searchsorted(keys, target), keys.size - 1)
        inside = pos >= 1.0 if shift < 0 else pos < _TOP  # no position -1, and none past 2^53
        hit = (keys[at] == target) & inside
        cand = rows[at]
        v = np.where(hit, value[cand], -1.0)
        better = hit & ((v > best[placed]) | (who[placed] < 0))
        best[placed[better]] = v[better]
        who[placed[better]] = cand[better]
    return best, who


def thread_codes(batch: Batch) -> np.ndarray:
    """A small integer per distinct thread (first-appearance order); -1 for a candidate with no thread."""
    seen: dict[str, int] = {}
    out = np.full(batch.n, -1, dtype=np.int64)
    if not any(batch.threads) and np.count_nonzero(np.isnan(batch.positions)) == batch.n:
        return out  # no thread named and no position (the usual request): a check in C, not a loop
    for i, (t, p) in enumerate(zip(batch.threads, batch.positions.tolist(), strict=True)):
        if t or p == p:  # a named thread, or the empty-named one of a candidate with a position (p == p: not NaN)
            out[i] = seen.setdefault(t, len(seen))
    return out


def context(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """The best query match among each memory's neighbours (same thread, position +/- 1)."""
    if batch.n == 0 or np.count_nonzero(np.isnan(batch.positions)) == batch.n:
        return RawSignal(np.zeros(batch.n), Same(batch.n, "no position: no neighbours"))
    m = match(batch, ctx, profile, population)
    best, who = neighbours(batch, m, population)
    return RawSignal(best.clip(0.0, 1.0), Lazy(batch.n, lambda i: _reason(batch, best, who, i)))


def _reason(batch: Batch, best: np.ndarray, who: np.ndarray, i: int) -> tuple[str, ...]:
    if np.isnan(batch.positions[i]):
        return ("no position: no neighbours",)
    j = int(who[i])
    if j < 0:
        return ("no neighbour in the batch (same thread, position +/- 1)",)
    side = "previous" if batch.positions[j] < batch.positions[i] else "next"
    return (f"{side} memory {batch.ids[j]!r} matches the query {best[i]:.3f}",)
