"""Deterministic ordering: the tie rule and placement."""

from __future__ import annotations

import numpy as np

from memrank.core.types import Placement


def tie_order(final: np.ndarray, event_time: np.ndarray, ingested_at: np.ndarray, ids: tuple[str, ...]) -> np.ndarray:
    """Indices sorted by final desc, event time desc, ingestion time desc, id asc (unset times last)."""
    n = len(ids)
    if n <= 1:  # nothing to order
        return np.zeros(n, dtype=np.int64)
    id_rank = np.empty(n, dtype=np.int64)
    id_rank[sorted(range(n), key=ids.__getitem__)] = np.arange(n)
    # Negating puts larger values first; an unset (NaN) time sorts after every set one.
    neg_event = np.where(np.isnan(event_time), np.inf, -event_time)
    neg_ingest = np.where(np.isnan(ingested_at), np.inf, -ingested_at)
    # lexsort: the last key is the primary one.
    return np.lexsort((id_rank, neg_ingest, neg_event, -final)).astype(np.int64)


def placement_positions(k: int, placement: Placement) -> np.ndarray:
    """Position (0-based, in the returned block) of rank r (index r-1), for k selected memories."""
    ranks = np.arange(k, dtype=np.int64)
    if placement == Placement.BEST_LAST:
        return k - 1 - ranks
    if placement == Placement.EDGES:
        # Rank 1 at the start, rank 2 at the end, then alternating inward.
        return np.where(ranks % 2 == 0, ranks // 2, k - 1 - ranks // 2)
    return ranks
