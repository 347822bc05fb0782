"""The fixtures every test folder may use, registered for the whole suite by tests/conftest.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memrank.grpc.running import Running
from memrank.grpc.server import create_server
from tests.support.s3server import S3Server
from tests.support.servers import loopback_settings


@pytest.fixture(scope="session")
def live_server() -> Iterator[Running]:
    """One in-process server on the built-in configuration."""
    running = create_server(loopback_settings())
    yield running
    running.stop(0)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A real S3-compatible server (gofakes3) on loopback with one bucket, shared by the session: see
    tests/support/s3server.py (built on first use; give each test a key prefix of its own)."""
    server = S3Server.launch(tmp_path_factory.mktemp("s3server"))
    yield server
    server.close()


# The fast lane (`pytest -m "not slow"`, docs/development/contributing.md) leaves out whole folders of
# servers in subprocesses, real tools and load (reliability, frameworks, helm, ops, bench, promtool,
# reference) and the modules below: subprocess servers, the decision-log and tracing suites, and the
# property tests with hundreds of examples. The full suite (CI's) runs everything.
SLOW_FOLDERS = frozenset({"reliability", "frameworks", "helm", "ops", "bench", "promtool", "reference"})
SLOW_MODULES = frozenset({
    "server/test_decision_loop.py", "server/test_dashboard_data.py", "server/test_tracing.py",
    "server/test_decision_log.py", "server/test_serve.py", "server/test_examples.py", "server/test_metrics.py",
    "server/test_prometheus.py", "server/test_client_deadline.py", "server/test_decision_log_faults.py",
    "unit/core/scoring/test_score_properties.py", "unit/core/selection/test_properties.py",
    "unit/core/selection/test_run_phase.py", "unit/api/test_convert_columns.py",
    "unit/core/signals/test_safety_prescan.py", "unit/core/scoring/test_compat.py",
    "unit/core/signals/test_substring_columns.py", "unit/core/signals/test_text_signals_batch.py",
    "tuning/test_cli.py", "eval/test_eval_cli.py", "server/test_s3_server_fixture.py",
    "server/test_decision_log_s3.py", "server/test_shadow_report.py", "tuning/test_fleet_s3.py",
    "promotion/test_loop.py",
})
TESTS = Path(__file__).resolve().parents[1]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the slow lane's tests ``slow``."""
    for item in items:
        rel = Path(str(item.path)).resolve().relative_to(TESTS)
        if rel.parts[0] in SLOW_FOLDERS or rel.as_posix() in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
