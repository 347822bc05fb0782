"""Thread: how well the rest of a memory's thread matches the query.

A conversation's sessions keep to a topic: the turns that answer a question
sit in the session where the question's subject comes up, not always next to
the turn that matches it best (that is ``context``, position +/- 1). Each
population candidate j has the match ``context`` uses::

    match_j = (1 - a) x minmax(relevance)_j + a x lexical_j

(``a`` = ``profile.context_lexical``; both parts in [0, 1]) and the signal is
the best match among the *other* population candidates of the same
``thread``, at any position::

    thread_i = max(match_j for j != i with thread_j = thread_i), 0 when there is none

in [0, 1]. A candidate without a thread (``thread`` "" and no position) has
none; when no two candidates share a thread (one candidate per session, as in
session-level memory) the signal is 0 for all, and a profile with
``share_constant_weight`` gives its weight to the others. Reasons name the
thread's best other match.
"""

from __future__ import annotations

import numpy as np

from memrank.core.batch import Batch
from memrank.core.profile import Profile
from memrank.core.reasons import Lazy, Same
from memrank.core.signals.base import RawSignal, ScoringContext
from memrank.core.signals.context import match, thread_codes


def best_other(codes: np.ndarray, value: np.ndarray, member: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each candidate, the largest ``value`` among the other members of its group, and which one gave it.

    Members are the candidates with ``member`` set and a code >= 0; ties go to the lower index. Returns
    (value, index), 0 and -1 where the group has no other member.
    """
    n = codes.shape[0]
    best = np.zeros(n)
    who = np.full(n, -1, dtype=np.int64)
    rows = (member & (codes >= 0)).nonzero()[0]
    if rows.size == 0:
        return best, who
    order = rows[np.lexsort((rows, -value[rows], codes[rows]))]  # by group, value desc, index asc
    g = codes[order]
    first = np.ones(order.size, dtype=bool)
    first[1:] = g[1:] != g[:-1]
    starts = first.nonzero()[0]
    size = np.diff(np.append(starts, order.size))
    groups = int(codes.max()) + 1
    top = np.full(groups, -1, dtype=np.int64)
    second = np.full(groups, -1, dtype=np.int64)
    top[g[starts]] = order[starts]
    two = starts[size >= 2]
    second[g[two]] = order[two + 1]
    placed = (codes >= 0).nonzero()[0]
    c = codes[placed]
    pick = np.where(top[c] == placed, second[c], top[c])
    has = pick >= 0
    who[placed[has]] = pick[has]
    best[placed[has]] = value[pick[has]]
    return best, who


def thread(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """The best query match among the other memories of each memory's thread."""
    codes = thread_codes(batch)
    if batch.n == 0 or int(codes.max(initial=-1)) + 1 == np.count_nonzero(codes >= 0):
        return RawSignal(np.zeros(batch.n), Same(batch.n, "no other memory shares its thread"))
    m = match(batch, ctx, profile, population)
    best, who = best_other(codes, m, population)
    return RawSignal(best.clip(0.0, 1.0), Lazy(batch.n, lambda i: _reason(batch, codes, best, who, i)))


def _reason(batch: Batch, codes: np.ndarray, best: np.ndarray, who: np.ndarray, i: int) -> tuple[str, ...]:
    if codes[i] < 0:
        return ("no thread",)
    j = int(who[i])
    if j < 0:
        return ("no other memory of its thread in the batch",)
    return (f"memory {batch.ids[j]!r} of the same thread matches the query {best[i]:.3f}",)
