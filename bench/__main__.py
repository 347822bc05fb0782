"""``python -m bench``: run the benchmark, print the table, write the results JSON (``--out``; by default in the
temp folder, so a run never overwrites the committed bench/results.json: pass ``--out bench/results.json`` to
publish one). An existing --out file is updated, not overwritten: the sections this run measures replace
theirs, the others (``tune_scale`` from ``bench.tune_scale --into``, ``memory`` with --no-memory, ``live``
with --no-live, ...) are kept, and the targets are worked out over the file as written."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.report import summary, table, targets
from bench.run import Options, run

DEFAULT_OUT = Path(tempfile.gettempdir()) / "memrank-bench-results.json"


def parse(argv: Sequence[str] | None) -> tuple[Options, Path, Path | None]:
    """Options from the command line."""
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument("--quick", action="store_true", help="10 candidates, few repetitions, 1 s load runs (CI smoke)")
    p.add_argument("--sizes", type=lambda s: tuple(int(x) for x in s.split(",")), help="e.g. 100,400,1600")
    p.add_argument("--load-seconds", type=float, help="closed-loop throughput run per workload (default 4)")
    p.add_argument("--ghz-seconds", type=float, help="ghz load run duration (default 10)")
    p.add_argument("--no-ghz", action="store_true", help="skip the ghz load run")
    p.add_argument("--no-live", action="store_true", help="in-process measurements only (no server)")
    p.add_argument("--no-baselines", action="store_true", help="skip the ports and LangChain")
    p.add_argument("--no-memory", action="store_true", help="skip the peak RSS measurement (fresh servers)")
    p.add_argument("--clients", help="end to end through these shipped clients, comma-separated (default "
                                     "python,go,ts,java; --quick: none; '' for none)")
    p.add_argument("--before", type=Path, help="an earlier results.json: the 'nothing else slower' targets compare "
                                               "with it (without it they print 'not run')")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT,
                   help=f"JSON results file (default {DEFAULT_OUT}); when it exists, the sections this run does "
                        "not measure are kept and the ones it measures replaced")
    a = p.parse_args(argv)
    opts = Options(sizes=(10,), reps=3, calls=10, load_seconds=0.5, concurrency=2, ghz_seconds=1.0,
                   memory_repeats=1, memory_largest=False, clients=()) if a.quick else Options()
    changes = {k: v for k, v in (("sizes", a.sizes), ("load_seconds", a.load_seconds),
                                  ("ghz_seconds", a.ghz_seconds)) if v is not None}
    changes |= {"ghz": not a.no_ghz, "live": not a.no_live, "baselines": not a.no_baselines}
    if a.no_memory:
        changes["memory_repeats"] = 0
    if a.clients is not None:
        changes["clients"] = tuple(c for c in a.clients.split(",") if c)
    return Options(**(vars(opts) | changes)), a.out, a.before


def merge(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The results file after a run: ``new``'s sections replace the old ones (in place), every other old
    section is kept, except a ``before`` comparison this run did not make and the ``<section>_run`` record
    (``bench.memory --into``'s ``memory_run``) of a section this run measured itself."""
    stale = {"before", *(f"{k}_run" for k in new)}
    return {k: v for k, v in old.items() if k not in stale} | new


def previous(out: Path) -> dict[str, Any]:
    """The results already in ``out`` ({} when there is no such file), read before the run so that a file the
    run could not update stops it before minutes of measuring."""
    if not out.exists():
        return {}
    try:
        old = json.loads(out.read_text())
    except (OSError, ValueError) as err:
        raise SystemExit(f"--out {out}: cannot read it as results JSON ({err}); fix it or pass another --out") from err
    if not isinstance(old, dict):
        raise SystemExit(f"--out {out}: holds a JSON {type(old).__name__}, not a results object; pass another --out")
    return old


def main(argv: Sequence[str] | None = None) -> int:
    """Run, print, write."""
    opts, out, before = parse(argv)
    old = previous(out)
    measured = run(opts, log=lambda msg: print(f"... {msg}", file=sys.stderr, flush=True))
    if before is not None:
        measured["before"] = {"file": str(before), **summary(json.loads(before.read_text()))}
    results = merge(old, measured)
    kept = [k for k in results if k not in measured and k not in ("targets", "table")]
    results["targets"] = targets(results)
    text = table(results)
    results["table"] = text
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1, sort_keys=False) + "\n")
    print(text)
    print(f"\nwrote {out}" + (f", keeping its {', '.join(kept)} (not measured by this run)" if kept else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
