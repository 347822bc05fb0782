"""The Python client's timeout bounds a call with every retry in it (it used to apply per attempt: 5 s could block
for about 20 s), against a real port where nothing listens (every attempt UNAVAILABLE) and a live server."""

from __future__ import annotations

import time

import grpc
import pytest

from memrank.client import RankingClient, RankingError
from tests.integration.conftest import free_port


def test_retries_stop_at_the_deadline_not_after_it() -> None:
    port = free_port()  # nothing listens: every attempt fails UNAVAILABLE at once
    with RankingClient(f"127.0.0.1:{port}", timeout=1.0, retries=1000, backoff=0.05) as client:
        started = time.monotonic()
        with pytest.raises(RankingError) as err:
            client.list_profiles()
        took = time.monotonic() - started
    assert err.value.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    assert 0.5 < took < 1.5, took  # retried for about the timeout, and never past it


def test_a_call_that_succeeds_is_unaffected(live_server) -> None:  # type: ignore[no-untyped-def]
    with RankingClient(f"127.0.0.1:{live_server.port}", timeout=5.0) as client:
        assert client.health() == "SERVING"
