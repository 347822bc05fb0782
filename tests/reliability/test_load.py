"""Load with ghz: zero errors, bounded RSS growth, p99 reported, every candidate accounted for."""

from __future__ import annotations

import os

import pytest

from tests.reliability.conftest import SOAK
from tests.reliability.load import ghz_binary, run

pytestmark = pytest.mark.skipif(ghz_binary() is None and not os.environ.get("CI"),
                                reason="ghz not installed (scripts/ci_reliability.sh installs it)")


def test_short_load_run_holds() -> None:
    report = run(seconds=10.0, concurrency=8, warmup=3.0)
    print(report)
    assert report.failures == [], report
    assert report.requests > 100 and report.verified_responses > 10


@pytest.mark.slow
@pytest.mark.skipif(not SOAK, reason="soak: set MEMRANK_SOAK=1")
def test_soak_two_workers_ten_minutes() -> None:
    report = run(seconds=600.0, concurrency=16, workers=2, warmup=10.0)
    assert report.failures == [], report
