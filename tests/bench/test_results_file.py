"""``python -m bench --out FILE`` into an existing results file: what the run measures is replaced, every
other section (``bench.tune_scale --into``'s, ``bench.memory --into``'s, anyone's) is kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

# The shapes bench.memory and bench.tune_scale write, with numbers picked for the targets below.
MEMORY_ROW = {"wire_mib": 0.8, "repeats": 3, "growth_mib": 2.0, "growth_mib_range": [1.5, 2.5], "ratio": 2.5,
              "fresh_growth_mib": 3.2, "fresh_ratio": 4.0, "server_peak_mib": 250.0}


def _tune_row(gb: float, peak_mib: float) -> dict[str, Any]:
    return {"files": 4, "compressed_gb": gb, "decisions": 1000, "feedback": 10, "sampled": 100, "usable": 200,
            "read_s": 1.0, "wall_s": 2.0, "peak_rss_mib": peak_mib}


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMRANK_")}
    return subprocess.run([sys.executable, "-m", "bench", "--quick", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env=env, check=False)


def test_an_in_process_run_keeps_the_sections_it_does_not_measure(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    kept = {
        "memory": {"400x384": MEMORY_ROW},
        "memory_run": {"command": "python -m bench.memory --sizes 400"},
        # the larger input comes first and peaks lower: the target reads the largest input, not the highest peak
        "tune_scale": [_tune_row(2.5, 1536.0), _tune_row(0.25, 2048.0)],
        "tune_scale_run": {"command": "python -m bench.tune_scale --sizes 2.5,0.25"},
        "notes": {"by": "hand", "list": [1, 2]},
    }
    out.write_text(json.dumps({"machine": {"started_utc": "earlier"}, "workloads": {"999x0": {}},
                               "before": {"file": "older.json", "rps_2w_400x384": 1.0}, **kept}))

    run = _bench("--no-live", "--no-baselines", "--out", str(out))

    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads(out.read_text())
    assert {k: results[k] for k in kept} == kept  # not measured by an in-process run: kept as they were
    assert set(results["workloads"]) == {"10x0", "10x384"}  # measured: replaced, the old 999x0 gone
    assert results["machine"]["started_utc"] != "earlier" and results["options"]["sizes"] == [10]
    assert "before" not in results  # this run compared with nothing
    assert "keeping its memory, memory_run, tune_scale, tune_scale_run, notes" in run.stdout
    got = {(t["issue"], t["target"]): (t["value"], t["met"]) for t in results["targets"]}
    assert got[44, "tune --log peak RSS at the largest input measured (GiB)"] == (1536.0 / 1024, True)
    assert got[31, "peak RSS growth / wire size at 400x384"] == (2.5, True)
    assert got[31, "nothing else slower: throughput at 2 workers, 400x384, slowdown against the --before run "
                   "(ratio)"] == (None, None)


def test_a_file_that_is_not_results_stops_the_run_before_it_measures(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    out.write_text("[1, 2]")
    run = _bench("--no-live", "--no-baselines", "--out", str(out))
    assert run.returncode != 0 and f"--out {out}: holds a JSON list, not a results object" in run.stderr
    assert "in-process" not in run.stderr and out.read_text() == "[1, 2]"
