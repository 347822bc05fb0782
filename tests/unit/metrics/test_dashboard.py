"""The generated dashboard: committed JSON is current, and every query reads metrics that exist."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import yaml
from prometheus_client import CollectorRegistry

from memrank.metrics.declare import Metrics
from memrank.metrics.shadow_export import exposition

ROOT = Path(__file__).resolve().parents[3]
RULES = ROOT / "helm" / "memrank" / "files" / "prometheus-rules.yaml"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("memrank_dashboard_generate", ROOT / "dashboards" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _known_series() -> set[str]:
    names: set[str] = set()
    registry = CollectorRegistry()
    Metrics(registry)
    for metric in registry.collect():  # every family declared
        names.add(metric.name)
        names.update(f"{metric.name}{suffix}" for suffix in ("_total", "_bucket", "_count", "_sum"))
    for line in exposition([("p", "q", "tie", 0, 0.0)]).decode().splitlines():  # shadow-report's families
        if line.startswith("# TYPE "):
            names.add(line.split()[2])
    rules = yaml.safe_load(RULES.read_text())
    names.update(r["record"] for g in rules["groups"] for r in g["rules"] if "record" in r)
    return names


def test_committed_json_is_what_the_generator_makes() -> None:
    gen = _generator()
    assert gen.OUTPUT.read_text(encoding="utf-8") == gen.render(), "run python dashboards/generate.py"
    assert gen.main(["--check"]) == 0


def test_check_fails_on_a_stale_file(tmp_path: Path) -> None:
    stale = tmp_path / "d.json"
    stale.write_text("{}\n")
    assert _generator().main(["--check", "--output", str(stale)]) == 1


def test_every_panel_query_reads_declared_metrics_or_recorded_rules() -> None:
    board = json.loads((ROOT / "helm" / "memrank" / "files" / "memrank-dashboard.json").read_text())
    known = _known_series()
    panels = [p for p in board["panels"] if p["type"] != "row"]
    assert len(panels) >= 12
    for panel in panels:
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            used = set(re.findall(r"memrank[:_][a-z0-9_:]+", target["expr"]))
            assert used and used <= known, (panel["title"], used - known)
    kinds = {p["type"] for p in panels}
    assert {"timeseries", "heatmap", "gauge", "stat"} <= kinds
    heatmap = next(p for p in panels if p["type"] == "heatmap")
    assert heatmap["repeat"] == "signal"  # one heatmap per signal, names taken from the metrics
    gauge = next(p for p in panels if p["type"] == "gauge")
    steps = [s["value"] for s in gauge["fieldConfig"]["defaults"]["thresholds"]["steps"]]
    assert steps == [None, 0.1, 0.25]


def test_a_panel_shows_decision_log_drops_by_reason() -> None:
    """A record missing from the decision log is visible on the dashboard, by why (issue #32): the drop counter
    summed by reason, beside the records written."""
    board = json.loads((ROOT / "helm" / "memrank" / "files" / "memrank-dashboard.json").read_text())
    exprs = {p["title"]: [t["expr"] for t in p["targets"]] for p in board["panels"] if p["type"] != "row"}
    drops = exprs["Decision log drops by reason"]
    # the losses summed by reason; the decisions sample_rate leaves out (by design) kept off this panel
    assert drops == ['sum by (reason) (rate(memrank_decision_log_dropped_total{reason!="sampled_out"}'
                     '[$__rate_interval]))'], drops
    written = exprs["Decision log records written"]
    assert any("memrank_decision_log_records_total" in t for t in written)
    assert any('memrank_decision_log_dropped_total{reason="sampled_out"}' in t for t in written), written
