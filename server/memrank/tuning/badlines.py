"""Where a log file's unreadable lines are: file, line number and why, for the files the engine found some in.

DuckDB skips a line it cannot read (``ignore_errors``) without saying where; such lines are rare (a
writer killed mid-line, a disk that filled up), so the few files that hold one are read again here,
line by line, to name each: ``torn`` (a record cut short), ``not JSON``, ``not a decision log
record`` (another schema) or ``missing <field>``.
"""

from __future__ import annotations

import json
from typing import Any

from memrank.decisions.record import DECISION_SCHEMA, FEEDBACK_SCHEMA
from memrank.tuning.logs import _torn
from memrank.tuning.sources import lines

# The fields the reader needs of each kind of record; a record without one is skipped like a torn line.
NEEDED = {DECISION_SCHEMA: ("decision_id", "weights", "candidates"), FEEDBACK_SCHEMA: ("feedback_id", "labels")}


def problem(text: str) -> str | None:
    """Why a line cannot be read as a record, or None when it can (blank lines are not records either way)."""
    if not text.strip():
        return None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        return "torn record (cut short)" if _torn(text) else f"not JSON ({exc.msg})"
    kind = record.get("schema") if isinstance(record, dict) else None
    if kind not in NEEDED:
        return f"not a decision log record (schema {kind!r})"
    missing = [k for k in NEEDED[kind] if not record.get(k) and record.get(k) != []]
    return f"missing {', '.join(missing)}" if missing else None


def locate(name: str, fs: Any = None) -> list[str]:
    """``"file:line: reason"`` for every line of the file that is not a readable record."""
    found = []
    for n, text in enumerate(lines(name, fs), 1):
        why = problem(text)
        if why is not None:
            found.append(f"{name}:{n}: {why}")
    return found
