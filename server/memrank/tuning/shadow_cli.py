"""The `memrank shadow-report` subcommand: feedback win rate by profile from decision log files
(``tuning.shadow_report``), as a table, JSON, or Prometheus text."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from memrank.tuning.dataset import TuningError
from memrank.tuning.logs import describe, read_records
from memrank.tuning.shadow_report import WINNERS, ShadowReport, shadow_report

DESCRIPTION = (
    "Join the decision log's memrank.decision.v1 records that carry a shadow (shadow.profile on the server, or "
    "RankRequest.shadow_profile) with their memrank.feedback.v1 records, and say per (served profile, shadow "
    "profile) pair which selection held the memories feedback marked relevant: the one with the larger DCG of "
    "the grades wins (docs/how-to/shadow.md). Exit status 2 on unreadable input."
)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `shadow-report` to the `memrank` subcommands."""
    p = sub.add_parser("shadow-report", help="feedback win rate of the served and the shadow profile, from the "
                       "decision log", description=DESCRIPTION)
    p.add_argument("--log", type=Path, action="append", required=True, metavar="JSONL",
                   help="decision log files of `memrank serve` (repeat for rotated files or several pods)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--prometheus", type=Path, metavar="FILE", help="also write the win rates as Prometheus text "
                   "(node_exporter's textfile collector reads *.prom files), replaced atomically")


def as_dict(report: ShadowReport) -> dict[str, Any]:
    """The report as JSON data."""
    pairs = []
    for tally in report.pairs.values():
        interval = tally.shadow_interval()
        pairs.append({"profile": tally.profile, "shadow_profile": tally.shadow_profile,
                      "compared": tally.compared, **{w: getattr(tally, w) for w in WINNERS},
                      "win_rate": {w: tally.rate(w) for w in WINNERS},
                      "shadow_share_of_decided_95": None if interval is None else list(interval)})
    return {"read": describe(report.stats), "without_shadow": report.without_shadow,
            "nothing_relevant": report.nothing_relevant, "pairs": pairs}


def table(report: ShadowReport) -> str:
    """The report as lines for a person."""
    lines = [f"memrank shadow-report: {describe(report.stats)}; {report.without_shadow} with feedback but no "
             f"shadow, {report.nothing_relevant} with nothing relevant (not compared)"]
    lines.append(f"{'profile':<20} {'shadow':<20} {'compared':>8} {'served':>8} {'shadow':>8} {'tie':>8}  "
                 "shadow share of decided [95%]")
    for t in report.pairs.values():
        interval = t.shadow_interval()
        share = "-" if interval is None else \
            f"{t.shadow / (t.served + t.shadow):.3f} [{interval[0]:.3f}, {interval[1]:.3f}]"
        lines.append(f"{t.profile:<20} {t.shadow_profile:<20} {t.compared:>8} {t.served:>8} {t.shadow:>8} "
                     f"{t.tie:>8}  {share}")
    return "\n".join(lines)


def _write_atomically(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def run(args: argparse.Namespace) -> int:
    """Read, join, tally, print (and write the Prometheus file)."""
    try:
        decisions, feedback = read_records(args.log)
    except TuningError as exc:
        print(f"memrank shadow-report: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"memrank shadow-report: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    report = shadow_report(decisions, feedback)
    print(json.dumps(as_dict(report), indent=2) if args.json else table(report))
    if args.prometheus is not None:
        from memrank.metrics.shadow_export import exposition

        _write_atomically(args.prometheus, exposition(
            (t.profile, t.shadow_profile, w, getattr(t, w), t.rate(w)) for t in report.pairs.values()
            for w in WINNERS))
    return 0
