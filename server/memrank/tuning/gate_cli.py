"""The gate's side of `memrank tune`: its flags, the serving profile a log names, the verdict printed and reported.

The arithmetic is ``tuning.gate``'s; this module decides what the command
says and whether it goes on to write ``--out``: with ``--require-better`` a
verdict that does not pass stops it (exit status ``gate.EXIT_NOT_BETTER``),
with one line on stderr that gives the numbers and the reason.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from memrank.core.profile import Profile
from memrank.decisions.record import DECISION_SCHEMA
from memrank.tuning import gate
from memrank.tuning.dataset import Dataset, TuningError
from memrank.tuning.metrics import Metric


def add_arguments(p: argparse.ArgumentParser) -> None:
    """--holdout, --require-better, --report."""
    p.add_argument("--holdout", type=float, metavar="FRACTION",
                   help=f"gate: hold out this share of the groups (seeded by --seed), fit on the rest only and "
                        f"compare tuned with --base on the held-out queries; 0 = no gate, fit on everything "
                        f"(default: {gate.DEFAULT_HOLDOUT} with --log, else 0)")
    p.add_argument("--require-better", action="store_true",
                   help=f"exit with status {gate.EXIT_NOT_BETTER} and leave --out unwritten unless the gate's 95%% "
                        f"interval of tuned - serving is above 0 (status 0: passed and written; 2: bad input)")
    p.add_argument("--report", type=Path, metavar="JSON",
                   help="write the gate's numbers (split, both means, difference, interval, verdict, weights) as "
                        "JSON, whether it passed or not")


def check(args: argparse.Namespace) -> None:
    """Resolve --holdout's default (0.3 with --log, else 0) and refuse flags that need a gate without one."""
    if args.holdout is None:
        args.holdout = gate.DEFAULT_HOLDOUT if args.log else 0.0
    if args.holdout and not 0.0 < args.holdout < 1.0:
        raise TuningError(f"--holdout {args.holdout}: expected a fraction in (0, 1), or 0 for no gate")
    if not args.holdout and (args.require_better or args.report is not None):
        raise TuningError("--require-better and --report need the gate: --holdout FRACTION above 0")


def logged_profile(paths: Iterable[object] | None) -> str | None:
    """The profile the first decision record of the --log files names (the one that served), when the first
    --log is a local file (plain or .gz); None otherwise (a glob, a directory, an object store: say --base)."""
    for item in paths or ():
        path = Path(str(item))
        if not path.is_file():
            return None
        with (gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz"
              else path.open(encoding="utf-8")) as f:
            for text in f:
                if DECISION_SCHEMA in text:
                    try:
                        return str(json.loads(text)["profile"])
                    except (ValueError, KeyError, TypeError):
                        return None
    return None


def verdict(args: argparse.Namespace, train: Dataset, held: Dataset, metric: Metric, base: Profile,
            tuned: np.ndarray) -> bool:
    """Judge the fitted weights on the held-out groups, print the verdict, write the report; False: do not write."""
    serving = np.array([s.weight for s in base.signals], dtype=np.float64)
    v = gate.judge(held, metric, serving, tuned, base.name, args.name)
    stop = bool(args.require_better and not v.passed)
    print(f"memrank tune: {v.line()}")
    if args.report is not None:
        gate.write_report(args.report, gate.report(
            v, fraction=args.holdout, seed=args.seed, train=train, signals=train.signals, serving=serving,
            tuned=tuned, required=bool(args.require_better), written=None if stop else args.out))
    if stop:
        print(f"memrank tune: {v.line()}; profile not written", file=sys.stderr)
    return not stop
