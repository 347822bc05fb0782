"""Per-candidate reasons that are written only when someone reads them.

A response with explain SELECTED shows the reasons of about twenty selected
memories out of hundreds of candidates; formatting every candidate's reasons
up front (numbers as text, rule names, matched phrases) cost more than the
scoring itself. Each signal therefore returns a ``Reasons`` sequence:
indexing candidate i formats candidate i's reasons, from the same columns
the values came from, and nothing else is formatted.

All kinds behave as immutable sequences of tuples of strings
(``len``, indexing, iteration, equality with a tuple of tuples). ``rows``
(and ``rows_of`` for any sequence) formats the rows of several candidates
in one call: a response reads twenty selected memories' reasons per signal,
and one call per signal column costs less than a method call and a bounds
check per memory and signal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import overload

Row = tuple[str, ...]


class Reasons(Sequence[Row]):
    """A lazily formatted reasons column (abstract: subclasses define ``row``)."""

    __slots__ = ("_n",)

    def __init__(self, n: int) -> None:
        self._n = n

    def row(self, i: int) -> Row:
        """Candidate i's reasons (0 <= i < n)."""
        raise NotImplementedError

    def rows(self, at: Sequence[int]) -> list[Row]:
        """The reasons of candidates ``at`` (each 0 <= i < n), in that order."""
        return list(map(self.row, at))

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> Row: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[Row]: ...

    def __getitem__(self, i: int | slice) -> Row | Sequence[Row]:
        if isinstance(i, slice):
            return tuple(self.row(k) for k in range(*i.indices(self._n)))
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError("reason index out of range")
        return self.row(i)

    def __iter__(self) -> Iterator[Row]:
        return (self.row(k) for k in range(self._n))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(other) == self._n and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self)!r})"


class Lazy(Reasons):
    """Reasons made by a function of the candidate index."""

    __slots__ = ("_fn",)

    def __init__(self, n: int, fn: Callable[[int], Row]) -> None:
        super().__init__(n)
        self._fn = fn

    def row(self, i: int) -> Row:
        return self._fn(i)

    def rows(self, at: Sequence[int]) -> list[Row]:
        return list(map(self._fn, at))


class Same(Reasons):
    """The same reasons for every candidate."""

    __slots__ = ("_row",)

    def __init__(self, n: int, *reasons: str) -> None:
        super().__init__(n)
        self._row: Row = tuple(reasons)

    def row(self, i: int) -> Row:
        return self._row

    def rows(self, at: Sequence[int]) -> list[Row]:
        return [self._row] * len(at)


class Table(Reasons):
    """Reasons picked from a small table by a per-candidate code."""

    __slots__ = ("_codes", "_table")

    def __init__(self, codes: Sequence[int], table: Sequence[Row]) -> None:
        super().__init__(len(codes))
        self._codes, self._table = codes, table

    def row(self, i: int) -> Row:
        return self._table[int(self._codes[i])]

    def rows(self, at: Sequence[int]) -> list[Row]:
        table, codes = self._table, self._codes
        return [table[int(codes[i])] for i in at]


class Noted(Reasons):
    """Another column's reasons with one more line for every candidate (one layer: no lazy column over a lazy
    column)."""

    __slots__ = ("_inner", "_note")

    def __init__(self, inner: Sequence[Row], note: str) -> None:
        super().__init__(len(inner))
        self._inner, self._note = inner, note

    def row(self, i: int) -> Row:
        inner = self._inner
        return (*(inner.row(i) if isinstance(inner, Reasons) else inner[i]), self._note)

    def rows(self, at: Sequence[int]) -> list[Row]:
        note = self._note
        return [(*r, note) for r in rows_of(self._inner, at)]


def with_note(reasons: Sequence[Row], note: str) -> Reasons:
    """The reasons with ``note`` after every candidate's own: a column of the same kind where the note can be
    folded in once (the same row for everyone, a table's rows), else one ``Noted`` layer."""
    if isinstance(reasons, Same):
        return Same(len(reasons), *reasons.row(0), note) if len(reasons) else Same(0)
    if isinstance(reasons, Table):
        return Table(reasons._codes, [(*row, note) for row in reasons._table])
    return Noted(reasons, note)


def rows_of(reasons: Sequence[Row], at: Sequence[int]) -> list[Row]:
    """``[reasons[i] for i in at]``, a lazily formatted column's in one call (each i a candidate, 0 <= i < n)."""
    if isinstance(reasons, Reasons):
        return reasons.rows(at)
    return [reasons[i] for i in at]
