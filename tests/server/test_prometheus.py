"""Real Prometheus tools (Debian's `prometheus` and `promtool`) on the chart's rules: the helpers the live test
(test_dashboard_data.py: every panel and rule with data, drift crossing the threshold) runs on, and promtool's checks
and unit tests of the rules.

The recording rule compares the last hour with the same hour 7 days ago, which a
test cannot wait for. The live test loads the very rules file the chart ships with
only its two durations rewritten (`[1h]` -> `[8s]`, `offset 7d` -> `offset 16s`,
``short_rules``), so the expressions Prometheus evaluates are the production ones;
the promtool unit tests (tests/promtool/drift.yaml) cover the real 7-day durations.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memrank.client import RankingClient, RankingError
from tests.server.test_metrics import free_port, rank_request

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "helm" / "memrank" / "files" / "prometheus-rules.yaml"
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
WINDOW, OFFSET = "8s", "16s"

pytestmark = pytest.mark.skipif(
    not Path(PROMETHEUS).exists() and not os.environ.get("CI"),
    reason="Debian's prometheus is not installed (CI installs it: scripts/ci_metrics.sh)",
)


def short_rules(text: str) -> str:
    """The shipped rules with the fleet-drift durations shortened for a live test."""
    assert text.count("[1h]") == 1 and text.count("offset 7d") == 2, "rules changed: update this test"
    return text.replace("[1h]", f"[{WINDOW}]").replace("offset 7d", f"offset {OFFSET}")


class Prom:
    """A Prometheus server on loopback with a throwaway TSDB."""

    def __init__(self, tmp_path: Path, target_port: int, jobs: dict[str, int] | None = None) -> None:
        """``jobs``: more scrape jobs, by name, of a port on loopback (each scraped at /metrics)."""
        rules = tmp_path / "rules.yaml"
        rules.write_text(short_rules(RULES.read_text()))
        config = tmp_path / "prometheus.yml"
        more = "".join(f"  - job_name: {name}\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n"
                       for name, port in (jobs or {}).items())
        config.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            f"rule_files:\n  - {rules}\n"
            f"scrape_configs:\n  - job_name: memrank\n    static_configs:\n"
            f"      - targets: ['127.0.0.1:{target_port}']\n{more}"
        )
        self.port = free_port()
        self.log = (tmp_path / "prometheus.log").open("w")
        self.popen = subprocess.Popen(
            [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT,
        )
        self.url = f"http://127.0.0.1:{self.port}"

    def get(self, path: str, **params: str) -> Any:
        url = f"{self.url}{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
        with urllib.request.urlopen(url, timeout=10) as resp:
            return json.loads(resp.read())

    def query(self, expr: str) -> list[dict[str, Any]]:
        body = self.get("/api/v1/query", query=expr)
        assert body["status"] == "success", body
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def wait(self, what: str, check: Callable[[], bool], timeout: float) -> float:
        """Poll ``check`` until true; return the seconds it took."""
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            try:
                if check():
                    return time.monotonic() - start
            except OSError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"timed out after {timeout}s waiting for {what}")

    def close(self) -> None:
        self.popen.terminate()
        try:
            self.popen.wait(20)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
        self.log.close()


def finite(result: list[dict[str, Any]]) -> list[float]:
    return [float(r["value"][1]) for r in result if math.isfinite(float(r["value"][1]))]


class Traffic:
    """Rank calls at about 10 per second in a thread; ``low``/``high`` bound the relevance and can change."""

    def __init__(self, target: str, low: float, high: float) -> None:
        self.target, self.low, self.high = target, low, high
        self.calls = 0
        self.stopping = threading.Event()
        self.failure: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        rng = np.random.default_rng(21)
        try:
            with RankingClient(self.target, timeout=10, retries=10) as client:
                while not self.stopping.wait(0.1):
                    self.calls += 1
                    if self.calls % 20 == 0:
                        with pytest.raises(RankingError):  # INVALID_ARGUMENT on purpose: error panels need data
                            client.rank({"candidates": [{"id": "dup"}, {"id": "dup"}]})
                    elif self.calls % 10 == 0:
                        client.rank(rank_request(rng, self.low, self.high, minScore=1.0))  # selects nothing
                    else:
                        client.rank(rank_request(rng, self.low, self.high))
        except BaseException as exc:  # surfaced by stop()
            self.failure = exc

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(20)
        if self.failure is not None:
            raise self.failure


PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_promtool_checks_the_rules_and_their_unit_tests_pass() -> None:
    checked = _promtool("check", "rules", str(RULES))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tests = sorted(str(p) for p in (ROOT / "tests" / "promtool").glob("*.yaml"))
    assert len(tests) >= 2
    tested = _promtool("test", "rules", *tests)
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_the_drift_alert_unit_test_fails_when_the_alert_cannot_fire(tmp_path: Path) -> None:
    """The promtool drift test is not vacuous: with an unreachable threshold it fails."""
    text = RULES.read_text()
    assert text.count("memrank:signal_drift_psi:offset7d >= 0.25") == 1
    files = tmp_path / "helm" / "memrank" / "files"
    files.mkdir(parents=True)
    (files / "prometheus-rules.yaml").write_text(text.replace("offset7d >= 0.25", "offset7d >= 1000"))
    tests = tmp_path / "tests" / "promtool"
    tests.mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "promtool" / "drift.yaml", tests / "drift.yaml")
    broken = subprocess.run([PROMTOOL, "test", "rules", str(tests / "drift.yaml")], capture_output=True,
                            text=True, timeout=120)
    assert broken.returncode != 0
    assert "MemrankSignalDriftHigh" in broken.stdout + broken.stderr
