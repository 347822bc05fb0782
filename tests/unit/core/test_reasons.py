"""Lazy reasons columns behave as immutable sequences of tuples, formatting only the rows read."""

from __future__ import annotations

import pytest

from memrank.core.reasons import Lazy, Noted, Same, Table, rows_of, with_note


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


def test_rows_are_the_rows_indexed_one_at_a_time() -> None:
    asked: list[int] = []

    def row(i: int) -> tuple[str, ...]:
        asked.append(i)
        return (f"c{i}",)

    at = [4, 0, 4, 2]
    kinds = [Lazy(5, row), Same(5, "s"), Table([1, 0, 1, 1, 0], [("zero",), ("one",)]), (("p",), ("q",)) * 3]
    for reasons in kinds:
        assert rows_of(reasons, at) == [reasons[i] for i in at]
        assert rows_of(reasons, []) == []
    assert rows_of(kinds[1], at) == [("s",)] * 4 and rows_of(kinds[2], at) == [("zero",), ("one",), ("zero",), ("one",)]
    asked.clear()
    assert rows_of(Lazy(5, row), [3, 1]) == [("c3",), ("c1",)] and asked == [3, 1]  # only the rows asked for


def test_noted_adds_its_line_after_every_candidates_own() -> None:
    asked: list[int] = []

    def row(i: int) -> tuple[str, ...]:
        asked.append(i)
        return ("a", f"b{i}") if i % 2 else ()

    noted = Noted(Lazy(4, row), "note")
    assert asked == [] and len(noted) == 4
    assert noted[1] == ("a", "b1", "note") and noted[2] == ("note",)
    assert noted.rows([3, 0]) == [("a", "b3", "note"), ("note",)]
    assert asked == [1, 2, 3, 0]
    assert noted == (("note",), ("a", "b1", "note"), ("note",), ("a", "b3", "note"))
    assert Noted((("x",), ()), "n").rows([1, 0]) == [("n",), ("x", "n")]  # over a plain sequence too
    assert Noted(Noted(Same(2, "s"), "one"), "two")[1] == ("s", "one", "two")


def test_with_note_folds_the_note_into_same_and_table_columns() -> None:
    same = with_note(Same(3, "s"), "n")
    table = with_note(Table([1, 0, 1], [("zero",), ("one",)]), "n")
    lazy = with_note(Lazy(3, lambda i: (str(i),)), "n")
    assert isinstance(same, Same) and isinstance(table, Table) and isinstance(lazy, Noted)
    assert same == (("s", "n"),) * 3
    assert table == (("one", "n"), ("zero", "n"), ("one", "n"))
    assert lazy == (("0", "n"), ("1", "n"), ("2", "n"))
    assert with_note(Same(0, "s"), "n") == ()
