"""Validation's fast path: every candidate rule proven a column at a time, or "not proven".

``clearly_valid`` False does not mean invalid: ``validate`` then walks the candidates one by one and names
each violation in order. True must mean that walk would find nothing (``tests/unit/grpc`` checks both on
hostile and ordinary batches).
"""

from __future__ import annotations

from itertools import chain

import numpy as np

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.bounds import (
    MAX_FACET_ABS,
    MAX_LAYER_NAME_BYTES,
    MAX_NAME_BYTES,
    MAX_POSITION,
    MAX_SECONDS,
    MIN_SECONDS,
    UNIT,
    utf8_within,
)
from memrank.api.request_columns import CandidateColumns
from memrank.config import Limits


def _in_unit(values: np.ndarray | list[float]) -> bool:
    """Every value in [0, 1] (NaN fails both comparisons, infinities one).

    A few values are compared in Python: two numpy reductions cost more than that up to a dozen or so.
    """
    if len(values) <= _FEW:
        return all(0.0 <= v <= 1.0 for v in (values.tolist() if isinstance(values, np.ndarray) else values))
    a = np.asarray(values, dtype=np.float64)
    return bool(a.min() >= 0.0 and a.max() <= 1.0)


_FEW = 8


def clearly_valid(cols: CandidateColumns, limits: Limits, retrieval: tuple[float, float] = UNIT) -> bool:
    """True when every candidate rule holds, checked a column at a time.

    A fast path only: False means "not proven", and the per-candidate checks
    then run and name each violation in order.
    """
    if not cols.n:
        return True
    ids = cols.ids
    if not all(ids) or len(set(ids)) != len(ids):
        return False
    short = (ids, cols.layers, cols.threads, cols.speakers, cols.kinds, cols.provenance)
    bounds = (limits.max_id_bytes, MAX_LAYER_NAME_BYTES, limits.max_thread_bytes, limits.max_speaker_bytes,
              limits.max_kind_bytes, limits.max_provenance_bytes)
    # One pass over the short texts: when the longest fits the smallest limit at 4 bytes a character, all fit
    # (each column against its own limit only otherwise).
    if max(map(len, chain(*short))) * 4 > min(bounds) and not all(map(utf8_within, short, bounds)):
        return False
    if not utf8_within(cols.contents, limits.max_content_bytes):
        return False
    in_range = _in_unit(cols.retrieval) if retrieval == UNIT else bool(np.isfinite(cols.retrieval).all())
    if not in_range or not _in_unit(cols.importance_values):
        return False
    positions = cols.position_values  # int64: compared exactly, never through float64
    if positions.size and not (positions.min() >= 0 and positions.max() <= MAX_POSITION):
        return False
    if not _SOURCES.issuperset(cols.source) or not _SAFETIES.issuperset(cols.safety):
        return False
    return _maps_valid(cols, limits) and _times_valid(cols) and _embeddings_valid(cols, limits)


_SOURCES = frozenset(pb.Source.values())
_SAFETIES = frozenset(pb.SafetyStatus.values())


def _scores_valid(maps: list[dict[str, float]]) -> bool:
    """Every name non-empty and of at most MAX_NAME_BYTES, every value finite and within +-MAX_FACET_ABS."""
    names = [k for m in maps for k in m]
    if not all(names) or not utf8_within(names, MAX_NAME_BYTES):
        return False
    values = np.array([v for m in maps for v in m.values()], dtype=np.float64)
    return not values.size or bool(np.abs(values).max() <= MAX_FACET_ABS)  # NaN fails the comparison


def _maps_valid(cols: CandidateColumns, limits: Limits) -> bool:
    rows = cols.maps
    if not rows:
        return True
    if any(len(r.stage_scores) > limits.max_stage_scores or len(r.metadata) > limits.max_metadata_entries
           for r in rows):
        return False
    metadata = [r.metadata for r in rows if r.metadata]
    if not utf8_within([k for m in metadata for k in m], limits.max_metadata_key_bytes) or \
            not utf8_within([v for m in metadata for v in m.values()], limits.max_metadata_value_bytes):
        return False
    facets = [r.facet_scores for r in rows if r.facet_scores]
    if len({k for m in facets for k in m}) > limits.max_facets:
        return False
    return _scores_valid(facets) and _scores_valid([r.stage_scores for r in rows if r.stage_scores])


def _times_valid(cols: CandidateColumns) -> bool:
    times = cols.times
    for t in times.values():
        if t is not None and not (
            t.seconds.min() >= MIN_SECONDS and t.seconds.max() <= MAX_SECONDS
            and t.nanos.min() >= 0 and t.nanos.max() <= 999_999_999
        ):
            return False
    start, end = times["valid_from"], times["valid_to"]
    if start is not None and end is not None:
        both = start.present & end.present
        before = (end.seconds < start.seconds) | ((end.seconds == start.seconds) & (end.nanos <= start.nanos))
        if (both & before).any():
            return False
    return True


def _embeddings_valid(cols: CandidateColumns, limits: Limits) -> bool:
    """Per-candidate embeddings: one dimension, within the limit, finite (packed ones: see _check_packed)."""
    if cols.packed or cols.dim:
        return True
    lengths = set(cols.embedding_lengths)
    lengths.discard(0)
    if not lengths:
        return True
    if len(lengths) > 1 or lengths.pop() > limits.max_embedding_dim:
        return False
    matrix = cols.embeddings
    return matrix is not None and bool(np.isfinite(matrix).all())
