"""A score breakdown as plain (JSON-ready) values: the one place its fields get their names and nesting.

Two readers see breakdowns off the wire. The framework adapters put a selected
memory's explanation in its document's metadata (``integrations.explanation``:
one value per field, from the response's ``ScoreBreakdown``); the decision log
keeps every candidate's numbers as columns (``decisions.capture`` on the
request path, ``decisions.record`` in the writer: one array per field, index i
is candidate i). Both take the names from here, ``ScoreBreakdown``'s fields in
snake_case, and both key each signal's parts by the signal's name.
(``api.encode.Breakdowns`` writes the wire's ``ScoreBreakdown`` itself.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

# ScoreBreakdown's fields as an explanation lists them, before "signals" (bucket and covered_by are left out:
# the calibration bucket is the response's, covered_by is only ever set on a dropped candidate).
FIELDS = ("retrieval_score", "combined_score", "final_score", "quality_score", "blend_term", "marginal_gain",
          "token_count", "token_count_estimated", "reasons")
# A signal's parts (SignalScore's fields but the name, which keys them).
SIGNAL_PARTS = ("raw", "normalized", "weight", "contribution", "reasons")
# The parts the decision log keeps per candidate: the weights are the record's own, once per decision, and
# the reasons are not logged.
LOGGED_SIGNAL_PARTS = ("raw", "normalized", "contribution")


def _as_is(value: Any) -> Any:
    return value


def signal_rows(signals: Iterable[Any], parts: Sequence[str] = SIGNAL_PARTS) -> tuple[tuple[Any, ...], ...]:
    """``(name, *parts)`` of each signal, read by attribute: a SignalScore's numbers or a SignalColumn's columns."""
    return tuple((s.name, *(getattr(s, p) for p in parts)) for s in signals)


def signals(rows: Iterable[Sequence[Any]], parts: Sequence[str] = SIGNAL_PARTS,
            value: Callable[[Any], Any] = _as_is) -> dict[str, dict[str, Any]]:
    """Each signal's parts under its name, ``{name: {part: value(x), ...}}``, from ``signal_rows``' rows."""
    return {row[0]: {p: value(x) for p, x in zip(parts, row[1:], strict=True)} for row in rows}


def breakdown(source: Any, value: Callable[[Any], Any] = _as_is) -> dict[str, Any]:
    """A ScoreBreakdown (or anything with its field names) as plain values: ``FIELDS``, then ``"signals"``."""
    out = {f: value(getattr(source, f)) for f in FIELDS}
    out["signals"] = signals(signal_rows(source.signals), SIGNAL_PARTS, value)
    return out
