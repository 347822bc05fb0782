"""``--labels``: one labelled Rank request per line.

Each non-blank line is a JSON object::

    {"request": <RankRequest as protobuf JSON>, "relevant": {"<candidate id>": grade, ...}, "group": "optional"}

Grades are finite numbers >= 0 (0 = not relevant; recall counts grade > 0,
nDCG uses the grades as gains). Every id in ``relevant`` must be a candidate
of the request. Without ``group`` a line is its own group. A line whose
grades are all 0 teaches nothing and is skipped (and counted). Every error
names the file, the line and the field or id.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.config import Limits
from memrank.core.errors import InvalidRequest
from memrank.core.profile import Profile
from memrank.tuning.dataset import Dataset, Query, TuningError
from memrank.tuning.queries import query_of_request

MAX_UNKNOWN_SHOWN = 5


def _grades(where: str, raw: Any) -> dict[str, float]:
    if not isinstance(raw, Mapping):
        raise TuningError(f"{where}: \"relevant\" must be an object of candidate id -> grade, got {raw!r}")
    out = {}
    for cid, g in raw.items():
        if isinstance(g, bool) or not isinstance(g, int | float) or not math.isfinite(g) or g < 0:
            raise TuningError(f"{where}: relevant[{cid!r}]: the grade must be a finite number >= 0, got {g!r}")
        out[str(cid)] = float(g)
    return out


def _request(where: str, raw: Any) -> pb.RankRequest:
    if not isinstance(raw, Mapping):
        raise TuningError(f"{where}: \"request\" must be a RankRequest JSON object, got {raw!r}")
    try:
        return json_format.ParseDict(raw, pb.RankRequest())
    except json_format.ParseError as exc:
        raise TuningError(f"{where}: \"request\" is not a RankRequest: {exc}") from None


def parse_line(where: str, text: str) -> tuple[pb.RankRequest, dict[str, float], str | None]:
    """The request, grades and group of one line; TuningError naming ``where`` otherwise."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TuningError(f"{where}: not JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(doc, Mapping):
        raise TuningError(f"{where}: expected an object with \"request\" and \"relevant\", got {type(doc).__name__}")
    for name in ("request", "relevant"):
        if name not in doc:
            raise TuningError(f"{where}: \"{name}\" is missing")
    extra = sorted(set(doc) - {"request", "relevant", "group"})
    if extra:
        raise TuningError(f"{where}: unknown key(s) {', '.join(map(repr, extra))}; known: request, relevant, group")
    group = doc.get("group")
    if group is not None and not isinstance(group, str | int):
        raise TuningError(f"{where}: \"group\" must be a string, got {group!r}")
    return _request(where, doc["request"]), _grades(where, doc["relevant"]), None if group is None else str(group)


def query_of_line(where: str, text: str, profile: Profile, limits: Limits, now: float) -> Query:
    """One line as a scored Query (its own group unless it names one)."""
    request, grades, group = parse_line(where, text)
    ids = set(request.columns.ids) if request.HasField("columns") else {c.id for c in request.candidates}
    unknown = [cid for cid in grades if cid not in ids]
    try:
        query = query_of_request(request, grades, profile, limits, now, where, group or where)
    except InvalidRequest as exc:
        raise TuningError(f"{where}: invalid request: " + "; ".join(f"{v.field}: {v.description}"
                                                                   for v in exc.violations)) from None
    if unknown:
        shown = ", ".join(map(repr, unknown[:MAX_UNKNOWN_SHOWN])) + (" ..." if len(unknown) > MAX_UNKNOWN_SHOWN else "")
        raise TuningError(f"{where}: relevant names id(s) that are not candidates of the request: {shown}")
    return query


def count_lines(path: Path) -> int:
    """Non-blank lines of the file (for the progress bar)."""
    with path.open(encoding="utf-8") as f:
        return sum(1 for line in f if line.strip())


def load_labels(path: Path, profile: Profile, limits: Limits, now: float,
                tick: Callable[[int], object] | None = None) -> Dataset:
    """Every labelled line of the file, scored under the profile; lines with nothing relevant skipped."""
    queries, skipped = [], 0
    with path.open(encoding="utf-8") as f:
        for n, text in enumerate(f, 1):
            if not text.strip():
                continue
            q = query_of_line(f"{path}:{n}", text, profile, limits, now)
            if q.relevant:
                queries.append(q)
            else:
                skipped += 1
            if tick is not None:
                tick(1)
    return Dataset(profile.name, tuple(s.name for s in profile.signals), tuple(queries), skipped)
