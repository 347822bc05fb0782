"""Token allocation: floors, shares by largest remainder, release — values worked by hand."""

from __future__ import annotations

from memrank.core.selection.budget import LayerBudget, allocate, release

SESSION = LayerBudget("session", 0.40, 0)
DURABLE = LayerBudget("durable", 0.35, 256)
KNOWLEDGE = LayerBudget("knowledge", 0.25, 0)


def test_floors_first_then_shares_of_the_rest() -> None:
    # 1000 - 256 = 744 by 0.40/0.35/0.25 = 297.6, 260.4, 186 -> floors 297, 260, 186 (sum 743);
    # the one leftover token goes to the largest remainder (0.6, session).
    assert allocate([SESSION, DURABLE, KNOWLEDGE], 1000) == [298, 256 + 260, 186]


def test_floors_larger_than_the_budget_are_scaled_down() -> None:
    a, b = LayerBudget("a", 1, 300), LayerBudget("b", 1, 100)
    # 200 * 300/400 = 150, 200 * 100/400 = 50; nothing left for shares.
    assert allocate([a, b], 200) == [150, 50]


def test_zero_shares_split_the_rest_equally() -> None:
    a, b, c = LayerBudget("a", 0, 0), LayerBudget("b", 0, 10), LayerBudget("c", 0, 0)
    # 100 - 10 = 90 equally: 30 each.
    assert allocate([a, b, c], 100) == [30, 40, 30]


def test_allocations_never_exceed_the_budget() -> None:
    layers = [LayerBudget(str(i), 1 / (i + 1), i * 7) for i in range(7)]
    for total in range(0, 400, 13):
        assert sum(allocate(layers, total)) <= total


def test_unused_tokens_go_to_starved_layers_by_share() -> None:
    layers = [SESSION, DURABLE, KNOWLEDGE]
    alloc = [300, 500, 200]
    used = [300, 100, 180]
    starved = [True, False, True]
    new, released, received = release(layers, alloc, used, starved)
    # durable releases 400; session and knowledge share it 0.40 : 0.25 -> 246.15.., 153.84.. -> 246, 154.
    assert released == [0, 400, 0]
    assert received == [246, 0, 154]
    assert new == [300 + 246, 100, 200 + 154]


def test_nothing_moves_without_a_starved_layer() -> None:
    new, released, received = release([SESSION, DURABLE], [10, 20], [5, 5], [False, False])
    assert (new, released, received) == ([10, 20], [0, 0], [0, 0])
