"""The /metrics endpoint under many scrapers at once (issue #41, item 8): a listen queue for them all, one
rendering shared by the scrapes that waited for it, and never numbers older than the scrape."""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from memrank.metrics.http import serve_metrics
from tests.support.servers import free_port


class CountedCollector(Collector):
    """A collector that counts how often it is rendered and takes 5 ms each time."""

    def __init__(self) -> None:
        self.renders = 0

    def collect(self) -> Iterator[GaugeMetricFamily]:
        self.renders += 1
        time.sleep(0.005)
        yield GaugeMetricFamily("test_renders", "renders so far", value=self.renders)


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as response:
        return str(response.read().decode())


@pytest.fixture()
def endpoint() -> Iterator[tuple[int, CollectorRegistry, CountedCollector]]:
    registry, counted = CollectorRegistry(), CountedCollector()
    registry.register(counted)
    served = serve_metrics("127.0.0.1", free_port(), registry)  # 0 means off
    assert served is not None
    yield served[0].server_port, registry, counted
    served[0].shutdown()
    served[0].server_close()


def test_a_hundred_scrapers_at_once_are_all_answered_at_once(
        endpoint: tuple[int, CollectorRegistry, CountedCollector]) -> None:
    """Python's listen queue of 5 dropped the others' SYNs: retried after 1, 3, 7 s, some timed out."""
    port, _, counted = endpoint
    start, took, errors = threading.Barrier(100), [], []

    def scrape() -> None:
        start.wait()
        began = time.monotonic()
        try:
            assert "test_renders" in _scrape(port)
        except Exception as exc:  # any failure is the finding
            errors.append(repr(exc))
        took.append(time.monotonic() - began)

    threads = [threading.Thread(target=scrape) for _ in range(100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == [] and len(took) == 100
    assert max(took) < 5, sorted(took)[-5:]  # with the queue of 5: 21-29 s
    assert counted.renders < 50  # the scrapes that waited for a rendering shared it


def test_a_scrape_never_gets_numbers_from_before_it_arrived(
        endpoint: tuple[int, CollectorRegistry, CountedCollector]) -> None:
    port, registry, _ = endpoint
    calls = Counter("test_calls", "calls", registry=registry)
    for k in range(1, 6):
        calls.inc()
        assert f"test_calls_total {k}.0" in _scrape(port)
