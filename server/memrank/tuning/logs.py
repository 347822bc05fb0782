"""``--log``: decision log files (memrank.decision.v1 and memrank.feedback.v1 lines) as a labelled dataset.

A feedback record joins its decision by ``decision_id``, else by ``request_id``
(a request id that more than one logged decision carries is ambiguous: such
feedback is counted and left out). Several feedback records on one decision
merge, a later label of a candidate replacing an earlier one; a repeated
``feedback_id`` counts once. Each labelled decision becomes a ``Query`` from
the logged normalised signals of the base profile (no content is needed: the
record holds every candidate's columns), eligible where no gate dropped the
candidate, graded by the labels (unlabelled candidates 0), token counts as
logged. Its group, for cross-validation, is the request id up to its last "/"
("session-42/turn-7" -> "session-42"), else the decision itself.

The fit is exact for decisions logged under a profile that computes the base's
signals with the base's normalisers (the same names are required, and the
normalisers are checked); only the weights are refitted.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memrank.core.profile import Profile
from memrank.decisions.record import DECISION_SCHEMA, FEEDBACK_SCHEMA, GATES
from memrank.tuning.dataset import Dataset, Query, TuningError


@dataclass
class LogStats:
    """What reading the logs found, for the report."""

    decisions: int = 0
    feedback: int = 0
    labelled: int = 0
    unlabelled: int = 0  # decisions without feedback: ignored
    orphaned: int = 0  # feedback whose decision is not in the logs
    ambiguous: int = 0  # feedback by a request id several decisions carry
    duplicates: int = 0  # feedback records seen before (same feedback_id)
    other_signals: int = 0  # labelled decisions without the base's signals (or with other normalisers)
    nothing_relevant: int = 0  # labelled decisions with no grade above 0
    profiles: dict[str, int] = field(default_factory=dict)
    torn: list[str] = field(default_factory=list)  # "file:line" of records cut short (a writer killed mid-line)


# Every record's line starts so (record.py writes "schema" first): a line that does and is not JSON was cut short.
_RECORD_START = '{"schema":"memrank.'


def _torn(text: str) -> bool:
    head = text.strip()[:len(_RECORD_START)]
    return bool(head) and _RECORD_START.startswith(head)


def read_records(paths: Iterable[Path], stats: LogStats | None = None
                 ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(decision records, feedback records) of the files, in file order; TuningError naming file and line. A
    record cut short (a writer killed mid-line) is skipped and listed in ``stats.torn``."""
    decisions, feedback = [], []
    for path in paths:
        with path.open(encoding="utf-8") as f:
            for n, text in enumerate(f, 1):
                if not text.strip():
                    continue
                try:
                    record = json.loads(text)
                except json.JSONDecodeError as exc:
                    if not _torn(text):
                        raise TuningError(f"{path}:{n}: not JSON ({exc.msg})") from None
                    if stats is not None:
                        stats.torn.append(f"{path}:{n}")
                    continue
                kind = record.get("schema") if isinstance(record, dict) else None
                if kind == DECISION_SCHEMA:
                    decisions.append(record)
                elif kind == FEEDBACK_SCHEMA:
                    feedback.append(record)
                else:
                    raise TuningError(f"{path}:{n}: not a decision log record (schema {kind!r}; expected "
                                      f"{DECISION_SCHEMA} or {FEEDBACK_SCHEMA})")
    return decisions, feedback


def join(decisions: list[dict[str, Any]], feedback: list[dict[str, Any]],
         stats: LogStats) -> list[tuple[dict[str, Any], dict[str, int]]]:
    """Each decision that has feedback, with its merged labels (candidate id -> grade), in log order."""
    by_id = {d["decision_id"]: d for d in decisions}
    by_request: dict[str, list[dict[str, Any]]] = {}
    for d in decisions:
        if d.get("request_id"):
            by_request.setdefault(d["request_id"], []).append(d)
    labels: dict[str, dict[str, int]] = {}
    seen: set[str] = set()
    for fb in feedback:
        if fb["feedback_id"] in seen:
            stats.duplicates += 1
            continue
        seen.add(fb["feedback_id"])
        target = by_id.get(fb.get("decision_id") or "")
        if target is None and fb.get("request_id"):
            matches = by_request.get(fb["request_id"], [])
            if len(matches) > 1:
                stats.ambiguous += 1
                continue
            target = matches[0] if matches else None
        if target is None:
            stats.orphaned += 1
            continue
        merged = labels.setdefault(target["decision_id"], {})
        merged.update({label["candidate_id"]: int(label["relevance"]) for label in fb["labels"]})
    stats.decisions, stats.feedback = len(decisions), len(feedback)
    stats.labelled = len(labels)
    stats.unlabelled = len(by_id) - len(labels)
    return [(d, labels[d["decision_id"]]) for d in by_id.values() if d["decision_id"] in labels]


def _group(decision: dict[str, Any]) -> str:
    rid = decision.get("request_id") or ""
    return rid.rpartition("/")[0] if "/" in rid else rid or decision["decision_id"]


def _column(values: list[float | None]) -> np.ndarray:
    return np.array([0.0 if v is None else v for v in values], dtype=np.float64)


def query_of_decision(decision: dict[str, Any], grades: dict[str, int], base: Profile) -> Query | None:
    """The decision as a Query over the base's signals; None when it lacks one of them or normalises otherwise."""
    logged = {w["signal"]: w["normalization"] for w in decision["weights"]}
    cands = decision["candidates"]
    for s in base.signals:
        if logged.get(s.name) != s.normalization or s.name not in cands["signals"]:
            return None
    ids = cands["id"]
    index = set(ids)
    eligible = np.array([o not in GATES for o in cands["outcome"]], dtype=bool)
    features = np.stack([_column(cands["signals"][s.name]["normalized"]) for s in base.signals])
    features[:, ~eligible] = 0.0
    return Query(
        key=decision["request_id"] or decision["decision_id"], group=_group(decision),
        features=features, eligible=eligible,
        grades=np.array([float(grades.get(i, 0)) for i in ids], dtype=np.float64),
        tokens=np.array(cands["token_count"], dtype=np.int64),
        outside=np.array([float(g) for i, g in grades.items() if i not in index], dtype=np.float64),
    )


def load_logs(paths: list[Path], base: Profile) -> tuple[Dataset, LogStats]:
    """The labelled decisions of the logs as a Dataset over the base's signals, and what was found."""
    stats = LogStats()
    decisions, feedback = read_records(paths, stats)
    queries = []
    for decision, grades in join(decisions, feedback, stats):
        stats.profiles[decision["profile"]] = stats.profiles.get(decision["profile"], 0) + 1
        q = query_of_decision(decision, grades, base)
        if q is None:
            stats.other_signals += 1
        elif not q.relevant:
            stats.nothing_relevant += 1
        else:
            queries.append(q)
    if not queries:
        raise TuningError(f"no labelled decision to tune on in {', '.join(map(str, paths))}: {describe(stats)}")
    return Dataset(base.name, tuple(s.name for s in base.signals), tuple(queries), stats.nothing_relevant), stats


def describe(stats: LogStats) -> str:
    """One line saying what the logs held."""
    parts = [f"{stats.decisions} decisions", f"{stats.feedback} feedback records",
             f"{stats.labelled} decisions with feedback", f"{stats.unlabelled} without (ignored)"]
    for name, value in (("feedback without its decision in the logs", stats.orphaned),
                        ("feedback by an ambiguous request_id", stats.ambiguous),
                        ("repeated feedback records", stats.duplicates),
                        ("labelled decisions without the base's signals and normalisers", stats.other_signals),
                        ("labelled decisions with nothing relevant", stats.nothing_relevant)):
        if value:
            parts.append(f"{value} {name}")
    if stats.torn:
        shown = ", ".join(stats.torn[:5]) + (", ..." if len(stats.torn) > 5 else "")
        parts.append(f"{len(stats.torn)} torn record line{'s' if len(stats.torn) > 1 else ''} skipped ({shown})")
    return ", ".join(parts)
