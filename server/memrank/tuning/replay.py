"""`memrank eval --log`: the logged, labelled traffic's metrics as answered and re-weighted under other profiles.

For each profile the decisions were logged under (``decision.profile``):

- ``as answered``: the selection the caller got, in rank order (after gates,
  diversity and budgets), scored against the feedback labels;
- ``<profile> (re-weighted)``: the logged normalised signals ranked by the
  linear score sum(w_s x normalised_s) of that profile's weights, gated
  candidates left out. This is the counterfactual the log supports: exact for
  the ranking a profile's combined score gives, when the profile computes the
  logged signals with the same normalisers; without the diversity pass and
  the budgets (which need the content and embeddings the log does not keep).
  A profile that needs a signal or normaliser the log lacks, or whose formula
  is not a weighted sum, is listed as not comparable, with the reason.

The reference of each group is its logged profile re-weighted (like with
like: both linear), and every other re-weighted row carries a paired bootstrap
interval against it. Metrics are ``memrank tune``'s (recall@5, recall@10,
nDCG@10 over the feedback grades; unlabelled candidates count 0).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memrank.core.profile import Profile
from memrank.evaluation.bootstrap import paired
from memrank.tuning.dataset import Query, Stack, TuningError
from memrank.tuning.logs import LogStats, describe, join, query_of_decision, read_records
from memrank.tuning.metrics import Metric, Objective
from memrank.tuning.queries import TUNABLE_FORMULAS

METRICS = ("recall@5", "recall@10", "ndcg@10")


def answered_query(decision: dict[str, Any], grades: dict[str, int]) -> Query:
    """The answer as a one-feature query: only selected candidates are eligible, scored by reverse rank."""
    cands = decision["candidates"]
    ranks = [r or 0 for r in cands["rank"]]
    n, ids = len(ranks), cands["id"]
    index = set(ids)
    return Query(key=decision["request_id"] or decision["decision_id"], group="",
                 features=np.array([[float(n + 1 - r) if r else 0.0 for r in ranks]]),
                 eligible=np.array([r > 0 for r in ranks], dtype=bool),
                 grades=np.array([float(grades.get(i, 0)) for i in ids]),
                 tokens=np.array(cands["token_count"], dtype=np.int64),
                 outside=np.array([float(g) for i, g in grades.items() if i not in index]))


def _why_not(profile: Profile, decision: dict[str, Any]) -> str | None:
    if profile.formula not in TUNABLE_FORMULAS:
        return f"formula {profile.formula} is not a weighted sum of its signals"
    logged = {w["signal"]: w["normalization"] for w in decision["weights"]}
    for s in profile.signals:
        if s.name not in logged:
            return f"signal {s.name} is not in the log"
        if logged[s.name] != s.normalization:
            return f"signal {s.name} is normalised {s.normalization}, logged {logged[s.name]}"
    return None


def _scores(queries: Sequence[Query], weights: np.ndarray) -> dict[str, np.ndarray]:
    stack = Stack.of(queries, weights.shape[0])
    return {m: Objective(stack, Metric.parse(m)).per_query(weights) for m in METRICS}


def _row(name: str, values: dict[str, np.ndarray], reference: dict[str, np.ndarray] | None) -> dict[str, Any]:
    row: dict[str, Any] = {"row": name, **{m: float(v.mean()) for m, v in values.items()}}
    if reference is not None:
        row["vs_reference"] = {m: paired(values[m].tolist(), reference[m].tolist()).as_dict() for m in METRICS}
    return row


def evaluate_logs(paths: list[Path], profiles: Mapping[str, Profile], names: Sequence[str]) -> dict[str, Any]:
    """The report: per logged profile, the answered row, the re-weighted rows, and what the logs held."""
    stats = LogStats()
    decisions, feedback = read_records(paths, stats)
    labelled = [(d, g) for d, g in join(decisions, feedback, stats) if any(v > 0 for v in g.values())]
    if not labelled:
        raise TuningError(f"no labelled decision with a relevant item in {', '.join(map(str, paths))}: "
                          f"{describe(stats)}")
    groups: dict[str, list[tuple[dict[str, Any], dict[str, int]]]] = {}
    for d, g in labelled:
        groups.setdefault(d["profile"], []).append((d, g))
    report: dict[str, Any] = {"logs": [str(p) for p in paths], "read": describe(stats), "groups": []}
    for logged_name, items in groups.items():
        group: dict[str, Any] = {"logged_profile": logged_name, "decisions": len(items), "rows": [],
                                 "not_comparable": {}}
        group["rows"].append(_row("as answered", _scores([answered_query(d, g) for d, g in items], np.ones(1)),
                                  None))
        order = [logged_name] + [n for n in names if n != logged_name]
        reference = None
        for name in order:
            profile = profiles.get(name)
            if profile is None:
                group["not_comparable"][name] = "not a configured profile (pass its file with --config)"
                continue
            reason = _why_not(profile, items[0][0])
            if reason is not None:
                group["not_comparable"][name] = reason
                continue
            queries = [query_of_decision(d, g, profile) for d, g in items]
            usable = [q for q in queries if q is not None]
            if len(usable) != len(items):
                group["not_comparable"][name] = "some decisions lack its signals"
                continue
            values = _scores(usable, np.array([s.weight for s in profile.signals]))
            if name == logged_name:
                reference = values
                group["rows"].append(_row(f"{name} (re-weighted, reference)", values, None))
            else:
                group["rows"].append(_row(f"{name} (re-weighted)", values, reference))
        report["groups"].append(group)
    return report


def table(report: dict[str, Any]) -> str:
    """The report as markdown tables, one per logged profile."""
    lines = [f"read: {report['read']}"]
    for g in report["groups"]:
        lines += ["", f"logged under {g['logged_profile']}: {g['decisions']} labelled decisions", "",
                  "| row | " + " | ".join(METRICS) + " |", "|---|" + "---:|" * len(METRICS)]
        for row in g["rows"]:
            cells = []
            for m in METRICS:
                cell = f"{row[m]:.3f}"
                if "vs_reference" in row:
                    p = row["vs_reference"][m]
                    cell += f" ({p['delta']:+.3f} [{p['ci95'][0]:+.3f}, {p['ci95'][1]:+.3f}])"
                cells.append(cell)
            lines.append(f"| {row['row']} | " + " | ".join(cells) + " |")
        for name, why in g["not_comparable"].items():
            lines.append(f"not comparable: {name}: {why}")
    lines.append("")
    lines.append("re-weighted rows rank the logged normalised signals by the profile's linear score (no diversity "
                 "pass, no budgets); intervals: paired bootstrap against the logged profile re-weighted")
    return "\n".join(lines)


def write(report: dict[str, Any], out: Path) -> None:
    """The report as JSON."""
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


def run(args: argparse.Namespace) -> int:
    """Run `memrank eval --log` (memrank.cli sends it here); prints the tables and writes the report."""
    from memrank.config import load_settings
    from memrank.core.errors import ConfigError
    from memrank.evaluation.cli import split_names

    try:
        settings = load_settings(args.config, env={})
        report = evaluate_logs(args.log, settings.profiles, split_names(args.profiles))
    except (ConfigError, TuningError) as exc:
        print(f"memrank eval: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"memrank eval: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    write(report, args.out)
    print(table(report))
    print(f"wrote {args.out}")
    return 0
