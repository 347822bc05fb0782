"""Every dashboard panel and every alerting rule has data behind it, in a real Prometheus.

Debian's `prometheus` scrapes a live `memrank serve` every second and evaluates the
chart's rules file (durations shortened as in test_prometheus.py, whose Prom and
Traffic this test reuses) while a few hundred Rank calls run: invalid calls
(INVALID_ARGUMENT), calls that select nothing, unsafe and over-budget candidates, and
half-way a shift of the retrieval scores, so the drift gauges and the fleet rule move.
Then, through /api/v1/query at one instant during the load:

* panels: every target of every panel, with the template variables filled in
  (`$__rate_interval` -> RATE; `$profile` -> its all-value `.*` and each profile;
  `$signal` -> each signal; `$form` -> raw and normalized; every combination the
  expression uses) must be valid PromQL and return at least one series with a finite
  value. A failure names the panel title and the expression.
* template variables: each `label_values(metric, label)` has values.
* recording rules: each recorded series exists.
* alerting rules: an alert that is not firing returns nothing, so "no series" says
  nothing. The rule used here: every alert expression must have the form
  `<inner> <comparison> <number>`; the full expression must be valid, `<inner>` (the
  expression without its threshold) must return finite series, and
  `(<inner>) <comparison> <number>` must give exactly the full expression's result
  (so cutting the threshold off did not change how the rest parses). The two drift
  alerts must also be pending after the shift.

Last, dashboards/render_png.py draws the key panels from /api/v1/query_range over the
whole load into a PNG in tmp (MEMRANK_DASHBOARD_PNG=path copies it there: that is how
docs/dashboard.png is made).
"""

from __future__ import annotations

import functools
import importlib.util
import itertools
import json
import math
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import yaml

from memrank.client import RankingClient
from tests.server.test_metrics import rank_request, write_config
from tests.server.test_prometheus import PROMETHEUS, RULES, Prom, Traffic, short_rules
from tests.support.servers import Proc, free_port, start_serve, stop

ROOT = Path(__file__).resolve().parents[2]
RENDER = ROOT / "dashboards" / "render_png.py"
RATE = "10s"  # $__rate_interval: Grafana's floor is 4 scrape intervals (1 s here)
BEFORE_SHIFT = 22  # seconds of unshifted load: past test_prometheus's OFFSET + WINDOW, so the fleet rule has a value
AFTER_SHIFT = 12
COMPARISON = re.compile(r"(?P<inner>.+?)\s*(?P<op>>=|<=|==|!=|>|<)\s*(?P<num>-?[0-9.]+(?:e[+-]?[0-9]+)?)\s*", re.S)
DRIFT_ALERTS = {"MemrankReplicaSignalDrift", "MemrankSignalDriftHigh"}

pytestmark = pytest.mark.skipif(
    not Path(PROMETHEUS).exists() and not os.environ.get("CI"),
    reason="Debian's prometheus is not installed (CI installs it: scripts/ci_metrics.sh)",
)


def load_render() -> ModuleType:
    spec = importlib.util.spec_from_file_location("render_png", RENDER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


dash = load_render()


def finite(result: list[dict[str, Any]]) -> list[float]:
    return [float(r["value"][1]) for r in result if math.isfinite(float(r["value"][1]))]


def extra_load(client: RankingClient, rng: np.random.Generator, low: float, high: float) -> int:
    """Paths Traffic does not take: a candidate redundant with another, a token budget too small for most
    candidates (OVER_BUDGET drops), and a call without a budget. The first call gets feedback (its decision is
    logged with the server's shadow), for the shadow report's win rates."""
    request = rank_request(rng, low, high)
    request["candidates"].append(dict(request["candidates"][0], id="copy"))  # same content as m0: REDUNDANT
    response = client.rank(request)
    used, seen = rng.choice(20, 2, replace=False)
    client.record_feedback(response, {f"m{used}": 3, f"m{seen}": 1})
    client.rank(dict(request, budget={"maxTokens": 40, "maxItems": 50}))
    client.rank({k: v for k, v in request.items() if k != "budget"})
    return 3


def load_for(seconds: float, traffic: Traffic, client: RankingClient, rng: np.random.Generator) -> int:
    """Traffic runs in its thread; add extra_load about twice a second, in traffic's current range."""
    until, calls = time.monotonic() + seconds, 0
    while time.monotonic() < until:
        calls += extra_load(client, rng, traffic.low, traffic.high)
        time.sleep(0.5)
    return calls


@pytest.fixture()
def stack(tmp_path: Path) -> Iterator[tuple[Proc, Prom]]:
    """`memrank serve` (drift window and reference of 200 candidates) and Prometheus scraping it."""
    mport = free_port()
    # The decision log on (every call logged), so its panels have series: records by kind, drops by reason (0).
    # The server's shadow on (its agreement panels), and `memrank shadow-report --prometheus` over the log served
    # to Prometheus as a textfile collector would (the win rate panel; 404 until the test writes it).
    log = (f"decision_log:\n  enabled: true\n  sink: file\n  path: {tmp_path / 'decisions.jsonl'}\n"
           "shadow:\n  profile: assistant\n")
    proc = start_serve(tmp_path, "--config", str(write_config(tmp_path, window=200, reference=200, extra=log)),
                       "--address", "127.0.0.1:0", "--metrics-port", str(mport))
    (tmp_path / "textfile").mkdir()
    files = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(SimpleHTTPRequestHandler, directory=str(
        tmp_path / "textfile")))
    threading.Thread(target=files.serve_forever, daemon=True).start()
    prom = Prom(tmp_path, mport, {"shadow-report": files.server_address[1]})
    try:
        yield proc, prom
    finally:
        prom.close()
        files.shutdown()
        files.server_close()
        assert stop(proc) == 0


def shadow_report(tmp_path: Path) -> None:
    """The win rates of the log so far, where the stack's file server serves them as /metrics."""
    out = tmp_path / "textfile" / "metrics"
    subprocess.run([sys.executable, "-m", "memrank.cli", "shadow-report", "--log", str(tmp_path / "decisions.jsonl"),
                    "--prometheus", str(out)], capture_output=True, text=True, timeout=120, check=True)


def active(prom: Prom) -> set[str]:
    """Names of the alerts pending or firing."""
    return {a["labels"]["alertname"] for a in prom.get("/api/v1/alerts")["data"]["alerts"]}


def variable_values(api: Any) -> dict[str, list[str]]:
    """Every value each template variable can take, as Grafana would offer it."""
    out: dict[str, list[str]] = {"__rate_interval": [RATE]}
    for var in dash.variables():
        if var["type"] == "custom":
            out[var["name"]] = var["query"].split(",")
        elif var["type"] == "query":
            m = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", var["query"])
            assert m, f"variable {var['name']}: unsupported query {var['query']!r}"
            found = api.label_values(m.group(2), m.group(1))
            assert found, f"variable {var['name']}: {var['query']} has no values"
            out[var["name"]] = ([var["allValue"]] if var.get("allValue") else []) + found
    return out


def panel_failures(api: Any, at: float, values: dict[str, list[str]]) -> tuple[int, list[str]]:
    """(queries run, failures) over every panel target and every combination of the variables it uses."""
    runs, failures = 0, []
    for panel in dash.panels():
        for target in panel["targets"]:
            used = sorted(n for n in values if re.search(r"\$\{?" + re.escape(n) + r"\b", target["expr"]))
            for combo in itertools.product(*(values[n] for n in used)):
                expr = dash.fill(target["expr"], dict(zip(used, combo, strict=True)))
                runs += 1
                try:
                    result = api.query(expr, at)
                except ValueError as exc:
                    failures.append(f"panel {panel['title']!r}: {expr}: error {exc}")
                    continue
                if not finite(result):
                    failures.append(f"panel {panel['title']!r}: {expr}: no series with a finite value ({result})")
    return runs, failures


def rule_failures(api: Any, at: float) -> tuple[list[str], list[str]]:
    """(rules checked, failures) for the recording and alerting rules Prometheus loaded."""
    groups = yaml.safe_load(short_rules(RULES.read_text()))["groups"]
    checked, failures = [], []
    for rule in (r for g in groups for r in g["rules"]):
        expr = " ".join(rule["expr"].split())
        if "record" in rule:
            checked.append(rule["record"])
            if not finite(api.query(rule["record"], at)):
                failures.append(f"recording rule {rule['record']}: no series")
            continue
        name = rule["alert"]
        checked.append(name)
        m = COMPARISON.fullmatch(expr)
        if not m:
            failures.append(f"alert {name}: not of the form <inner> <comparison> <number>: {expr}")
            continue
        try:
            full = api.query(expr, at)
        except ValueError as exc:
            failures.append(f"alert {name}: {expr}: error {exc}")
            continue
        inner = m.group("inner")
        if not finite(api.query(inner, at)):
            failures.append(f"alert {name}: without its threshold, {inner} returns no series")
        again = api.query(f"({inner}) {m.group('op')} {m.group('num')}", at)
        if sorted(map(json.dumps, again)) != sorted(map(json.dumps, full)):
            failures.append(f"alert {name}: ({inner}) {m.group('op')} {m.group('num')} differs from {expr}")
    return checked, failures


def test_every_panel_and_alert_has_data_under_load_and_the_key_panels_render(
        stack: tuple[Proc, Prom], tmp_path: Path) -> None:
    started = time.monotonic()
    proc, prom = stack
    api = dash.Prometheus(prom.url)
    prom.wait("prometheus ready", lambda: prom.get("/api/v1/status/buildinfo")["status"] == "success", 30)
    prom.wait("target up", lambda: finite(prom.query('up{job="memrank"} == 1')) == [1.0], 30)
    assert {g["name"] for g in prom.get("/api/v1/rules")["data"]["groups"]} == {"memrank-drift.rules",
                                                                                "memrank-alerts"}
    target = f"127.0.0.1:{proc.port}"
    start = time.time()
    traffic = Traffic(target, 0.0, 0.4)
    client = RankingClient(target, timeout=10, retries=10)
    try:
        rng = np.random.default_rng(5)
        extra = load_for(BEFORE_SHIFT, traffic, client, rng)
        gauge = 'memrank_signal_drift_psi{signal="relevance",profile="default"}'
        fleet = 'memrank:signal_drift_psi:offset7d{signal="relevance",profile="default"}'
        before = finite(prom.query(gauge)), finite(prom.query(fleet))
        assert before[0] and before[0][0] < 0.25, f"gauge drift before any shift: {before}"
        assert before[1] and before[1][0] < 0.1, f"fleet drift (recording rule) before any shift: {before}"
        traffic.low, traffic.high = 0.6, 1.0  # relevance moves: PSI and JS of relevance rise
        extra += load_for(AFTER_SHIFT, traffic, client, rng)
        prom.wait("gauge PSI > 0.25", lambda: any(v > 0.25 for v in finite(prom.query(gauge))), 30)
        prom.wait("fleet PSI > 0.25", lambda: any(v > 0.25 for v in finite(prom.query(fleet))), 30)
        prom.wait("the drift alerts pending", lambda: active(prom) >= DRIFT_ALERTS, 15)
        shadow_report(tmp_path)
        prom.wait("the shadow report scraped", lambda: finite(prom.query("memrank_shadow_feedback_win_rate")), 15)
        time.sleep(2)  # the instant below (now - 1 s) then has the report's scrape behind it
        at = time.time() - 1  # an instant with a scrape of live load on both sides
        values = variable_values(api)
        runs, failures = panel_failures(api, at, values)
        checked, rule_fails = rule_failures(api, at)
    finally:
        client.close()
        traffic.stop()
    unhealthy = [(r["name"], r.get("lastError")) for g in prom.get("/api/v1/rules")["data"]["groups"]
                 for r in g["rules"] if r["health"] != "ok"]
    assert not unhealthy, unhealthy
    assert not failures + rule_fails, "\n".join(failures + rule_fails)
    assert traffic.calls > 200

    png = tmp_path / "dashboard.png"
    out = subprocess.run([sys.executable, str(RENDER), "--prometheus", prom.url, "--output", str(png),
                          "--start", f"{start:.3f}", "--end", f"{at:.3f}", "--step", "1", "--rate-interval", RATE],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(out.stdout)
    assert set(report["series"]) == set(dash.KEY_PANELS) and all(report["series"].values()), report
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size < 300_000, report
    if os.environ.get("MEMRANK_DASHBOARD_PNG"):
        dest = ROOT / os.environ["MEMRANK_DASHBOARD_PNG"]
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(png, dest)
    print(f"\n{runs} panel queries over {len(dash.panels())} panels and {len(checked)} rules, all with data; "
          f"{traffic.calls} + {extra} calls; variables {values}; PNG {report}; {time.monotonic() - started:.1f}s")


class FakeProm:
    """One finite series for every query, except: `bad` in it -> an error, `gone` in it -> no series."""

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        if "bad" in expr:
            raise ValueError("parse error")
        return [] if "gone" in expr else [{"metric": {}, "value": [at, "1"]}]


def test_the_checks_name_the_panel_or_rule_and_the_expression_that_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without Prometheus: the checks above are not vacuous, and say what failed."""
    panels = [{"title": "Fine", "targets": [{"expr": 'sum(rate(ok{profile=~"$profile"}[$__rate_interval]))'}]},
              {"title": "Broken", "targets": [{"expr": "sum(bad"}]},
              {"title": "Empty", "targets": [{"expr": 'gone{signal="$signal"}'}, {"expr": "ok"}]}]
    monkeypatch.setattr(dash, "panels", lambda: panels)
    values = {"__rate_interval": ["10s"], "profile": [".*", "default"], "signal": ["a", "b"]}
    runs, failures = panel_failures(FakeProm(), 0.0, values)
    assert runs == 2 + 1 + 2 + 1
    assert failures == ["panel 'Broken': sum(bad: error parse error",
                        "panel 'Empty': gone{signal=\"a\"}: no series with a finite value ([])",
                        "panel 'Empty': gone{signal=\"b\"}: no series with a finite value ([])"]

    class Gone(FakeProm):  # the error counter no longer exists
        def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
            return super().query(expr.replace("memrank_requests_total", "gone"), at)

    checked, fails = rule_failures(Gone(), 0.0)
    assert checked == [r.get("record") or r["alert"] for g in yaml.safe_load(RULES.read_text())["groups"]
                       for r in g["rules"]]
    assert len(fails) == 1 and fails[0].startswith("alert MemrankErrorRatioHigh: without its threshold, sum by (job)")
    assert COMPARISON.fullmatch("a / (b > 0)") is None  # a comparison inside parentheses is not a threshold
