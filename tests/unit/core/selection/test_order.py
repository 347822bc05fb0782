"""The tie rule and placement order, against hand-written expectations."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from memrank.core.selection.order import placement_positions, tie_order
from memrank.core.types import Placement

NAN = float("nan")


def test_ties_break_by_event_time_then_ingestion_then_id() -> None:
    final = np.array([0.5, 0.5, 0.5, 0.5, 0.9, 0.5])
    event = np.array([10.0, 20.0, 20.0, NAN, 0.0, 20.0])
    ingest = np.array([0.0, 1.0, 2.0, 5.0, 0.0, 2.0])
    ids = ("a", "b", "d", "e", "z", "c")
    # 0.9 first; then event 20 (ingest 2: ids c < d; ingest 1: b); then event 10; unset event last.
    assert [ids[i] for i in tie_order(final, event, ingest, ids)] == ["z", "c", "d", "b", "a", "e"]


def test_empty_order() -> None:
    assert tie_order(np.zeros(0), np.zeros(0), np.zeros(0), ()).tolist() == []


def test_edges_puts_rank_one_and_two_at_the_ends_weakest_in_the_middle() -> None:
    assert placement_positions(6, Placement.EDGES).tolist() == [0, 5, 1, 4, 2, 3]
    assert placement_positions(5, Placement.BEST_LAST).tolist() == [4, 3, 2, 1, 0]
    assert placement_positions(4, Placement.BEST_FIRST).tolist() == [0, 1, 2, 3]


@given(st.integers(0, 200), st.sampled_from(list(Placement)))
def test_positions_are_a_permutation(k: int, placement: Placement) -> None:
    pos = placement_positions(k, placement)
    assert sorted(pos.tolist()) == list(range(k))
    if placement == Placement.EDGES and k >= 2:
        assert pos[0] == 0 and pos[1] == k - 1
