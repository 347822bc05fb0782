"""Lazy reasons columns behave as immutable sequences of tuples, formatting only the rows read."""

from __future__ import annotations

import pytest

from memrank.core.reasons import Lazy, Same, Table


def test_lazy_formats_only_the_rows_read() -> None:
    asked: list[int] = []

    def row(i: int) -> tuple[str, ...]:
        asked.append(i)
        return (f"candidate {i}",)

    reasons = Lazy(1000, row)
    assert len(reasons) == 1000 and asked == []
    assert reasons[7] == ("candidate 7",) and reasons[-1] == ("candidate 999",)
    assert asked == [7, 999]


def test_the_three_kinds_equal_the_tuples_they_stand_for() -> None:
    assert Same(3, "a", "b") == (("a", "b"),) * 3
    assert Table([2, 0, 2], [("zero",), ("one",), ("two",)]) == (("two",), ("zero",), ("two",))
    assert Lazy(2, lambda i: (str(i),)) == [("0",), ("1",)]
    assert Same(2, "x") != (("x",),)  # a different length is not equal
    assert list(Same(2, "x")[0:5]) == [("x",), ("x",)]  # slices clip like a tuple's


def test_out_of_range_is_an_index_error_and_columns_are_unhashable() -> None:
    reasons = Same(2, "x")
    with pytest.raises(IndexError):
        reasons[2]
    with pytest.raises(IndexError):
        reasons[-3]
    with pytest.raises(TypeError):
        hash(reasons)
