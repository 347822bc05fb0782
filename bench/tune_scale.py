"""`memrank tune --log` over growing fleet logs: wall time and peak memory against the compressed input.

    python -m bench.tune_scale --sizes 0.25,1,4              # GB of gzip logs (bench.fleet_logs), ~20 min here
    python -m bench.tune_scale --sizes 0.25,1,4 --into bench/results.json   # also the results' "tune_scale"

The largest size's partitions are written once (into --data, kept for reuse: a later run with the
same or smaller sizes writes nothing); each size reads the first files of them, so a larger input
holds a smaller one. Each size runs `memrank tune --log DIR --model linear --sample-queries N` in a
fresh process (the CLI as an operator runs it, fitting included), whose peak RSS comes from
``os.wait4`` (the process with its DuckDB threads). Time should grow with the bytes, memory not:
DuckDB holds to its 1 GB limit and the sample bounds what Python keeps.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.fleet_logs import FILE_BYTES, generate

READ = re.compile(r"read (\d+) files? in ([\d.]+) s")
COUNTS = re.compile(r"(\d+) decisions, (\d+) feedback records")
SAMPLED = re.compile(r"sampled (\d+) of (\d+)")


def _files(data: Path) -> list[Path]:
    return sorted(data.rglob("*.jsonl.gz"))


def ensure(data: Path, gb: float) -> list[Path]:
    """The partitions under ``data``, writing more until there are about ``gb`` GB of them."""
    want = max(1, round(gb * 1e9 / FILE_BYTES))
    have = _files(data)
    if len(have) < want:  # writes the missing files only
        started = time.monotonic()
        generate(data, gb)
        print(f"generated {gb} GB under {data} in {time.monotonic() - started:.0f} s", flush=True)
    return _files(data)[:want]


def run_one(files: list[Path], sample: int, work: Path) -> dict[str, Any]:
    """One `memrank tune --log` over ``files``: its wall time, peak RSS and what it printed."""
    view = work / "view"
    shutil.rmtree(view, ignore_errors=True)
    view.mkdir(parents=True)
    for i, f in enumerate(files):  # the subset as one directory, as an operator would point at a prefix
        (view / f"{i:05d}-{f.name}").symlink_to(f)
    cmd = [sys.executable, "-m", "memrank.cli", "tune", "--log", str(view), "--out", str(work / "tuned.yaml"),
           "--model", "linear", "--sample-queries", str(sample), "--no-progress"]
    started = time.monotonic()
    with (work / "out").open("w") as out_f, (work / "err").open("w") as err_f:
        proc = subprocess.Popen(cmd, stdout=out_f, stderr=err_f)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage: its peak RSS
    wall = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    out = (work / "out").read_text()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {(work / 'err').read_text().strip()}")
    read, counts, sampled = READ.search(out), COUNTS.search(out), SAMPLED.search(out)
    assert read and counts and sampled, out
    return {"files": len(files), "compressed_gb": sum(f.stat().st_size for f in files) / 1e9,
            "decisions": int(counts[1]), "feedback": int(counts[2]), "sampled": int(sampled[1]),
            "usable": int(sampled[2]), "read_s": float(read[2]), "wall_s": wall,
            "peak_rss_mib": _peak_mib(usage), "output": out.strip().splitlines()}


def _peak_mib(usage: Any) -> float:
    return float(usage.ru_maxrss) / 1024  # Linux: KiB


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown table of the runs."""
    lines = ["| compressed GB | files | decisions | sampled | read s | wall s | read s/GB | peak RSS MiB |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['compressed_gb']:.2f} | {r['files']} | {r['decisions']:,} | {r['sampled']:,} | "
                     f"{r['read_s']:.0f} | {r['wall_s']:.0f} | {r['read_s'] / r['compressed_gb']:.0f} | "
                     f"{r['peak_rss_mib']:.0f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Generate, run each size, print the table; optionally record it into a results file."""
    p = argparse.ArgumentParser(prog="python -m bench.tune_scale", description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="0.25,1,4", help="compressed GB per run, ascending (default 0.25,1,4)")
    p.add_argument("--sample-queries", type=int, default=10_000, help="tune's budget (default 10000)")
    p.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "memrank-fleet-logs",
                   help="where the partitions are written and kept (default $TMPDIR/memrank-fleet-logs)")
    p.add_argument("--into", type=Path, help="a results.json whose 'tune_scale' this run replaces")
    a = p.parse_args(argv)
    sizes = [float(x) for x in a.sizes.split(",")]
    started, load = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), list(os.getloadavg())
    files = ensure(a.data, max(sizes))
    rows = []
    with tempfile.TemporaryDirectory(prefix="memrank-tune-scale-") as work:
        for gb in sizes:
            n = max(1, round(gb * 1e9 / FILE_BYTES))
            rows.append(run_one(files[:n], a.sample_queries, Path(work)))
            print(table(rows[-1:]).splitlines()[-1], flush=True)
    print(table(rows))
    if a.into is not None:
        data = json.loads(a.into.read_text())
        data["tune_scale"] = [{k: v for k, v in r.items() if k != "output"} for r in rows]
        data["tune_scale_run"] = {"started_utc": started, "load_average_at_start": load,
                                  "sample_queries": a.sample_queries, "nproc": os.cpu_count(),
                                  "command": "python -m bench.tune_scale " + " ".join(
                                      argv if argv is not None else sys.argv[1:])}
        a.into.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
        print(f"wrote tune_scale into {a.into}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
