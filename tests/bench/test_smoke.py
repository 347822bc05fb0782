"""The bench command works end to end on a tiny batch (no timing assertions: targets live in the bench)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import ghz
from bench.baselines import langchain_available

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_quick_bench_prints_the_table_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    args = [sys.executable, "-m", "bench", "--quick", "--out", str(out)]
    if ghz.find_ghz() is None:
        args.append("--no-ghz")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMRANK_")}
    run = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300, env=env, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "server time by stage" in run.stdout and "targets" in run.stdout
    results = json.loads(out.read_text())
    assert set(results["workloads"]) == {"10x0", "10x384"}
    stages = results["workloads"]["10x384"]["stages"]
    for name in ("decode", "validate", "columns", "signals", "core", "encode", "handler"):
        assert stages[name]["p50_ms"] > 0, name
    assert set(stages["explain"]) == {"full", "selected", "none"}
    assert results["workloads"]["10x0"]["ports"]["pairs"].keys() == {"agent-observer", "generative-agents",
                                                                     "lexical-idf"}
    lc = results["workloads"]["10x384"]["langchain"]
    assert ("skipped" in lc) != langchain_available()
    live = results["live"]
    assert live["latency"]["10x384"]["p50_ms"] > 0 and live["empty_rpc"]["p50_ms"] > 0
    for key in ("10x0", "10x384"):
        tp = live["throughput"][key]
        assert tp["workers_1"]["requests"] > 0 and tp["workers_2"]["requests"] > 0
        assert tp["workers_1"]["errors"] == 0 and tp["workers_2"]["errors"] == 0
    if "ghz" in live:
        assert "skipped" in live["ghz"] or live["ghz"]["count"] > 0
    assert {t["target"] for t in results["targets"]} and all("met" in t for t in results["targets"])


def test_growth_times_both_sizes_alternately() -> None:
    from bench.data import workload
    from bench.run import growth

    g = growth(workload(10, 8), workload(40, 8), 3)
    assert (g["small"], g["large"], g["dim"]) == (10, 40, 8)
    for name in ("core", "handler"):
        assert g[name]["small_cpu_p50_ms"] > 0 and g[name]["large_cpu_p50_ms"] > 0
        assert g[name]["ratio"] == g[name]["large_cpu_p50_ms"] / g[name]["small_cpu_p50_ms"]


def test_each_port_pair_computes_one_function() -> None:
    """A ratio is reported only for a port and a memrank call whose scores agree (the bench checks it)."""
    from bench.data import workload
    from bench.run import core_vs_ports

    out = core_vs_ports(workload(12, 0), 3)
    assert {k: v["same_output"] for k, v in out["pairs"].items()} == {
        "agent-observer": True, "generative-agents": True, "lexical-idf": True}
    assert out["pairs"]["lexical-idf"]["profile"] == "lexical-idf"


def test_a_port_that_computes_something_else_stops_the_bench(monkeypatch: pytest.MonkeyPatch) -> None:
    import bench.run
    from bench.baselines import port_scorers
    from bench.data import workload

    def off_by_a_little(w: object) -> dict[str, object]:
        ports = port_scorers(w)  # type: ignore[arg-type]
        return {**ports, "generative-agents": lambda: [s + 1e-6 for s in ports["generative-agents"]()]}

    monkeypatch.setattr(bench.run, "port_scorers", off_by_a_little)
    with pytest.raises(AssertionError, match="generative-agents port and memrank's score"):
        bench.run.core_vs_ports(workload(12, 0), 3)
