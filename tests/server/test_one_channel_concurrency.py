"""Calls at four times the server's stream limit on one channel all succeed: the shipped clients wait for a
free stream, and the server never refuses a stream the client saw free (issue #32, item 6)."""

from __future__ import annotations

import asyncio
import collections
import threading
from collections.abc import Iterator

import pytest

from memrank.client import AsyncRankingClient, RankingClient, RankingError
from memrank.grpc.running import Running
from memrank.grpc.server import create_server
from tests.support.servers import loopback_settings

STREAMS = 8  # server.max_streams_per_connection, small so that four times it is quick
CALLERS = 4 * STREAMS
CALLS_EACH = 6
REQUEST = {"query": "green tea", "candidates": [
    {"id": f"m{i}", "retrievalScore": 0.2 + i / 100, "content": "the user prefers green tea " * 20}
    for i in range(40)]}


@pytest.fixture(scope="module")
def server() -> Iterator[Running]:
    running = create_server(loopback_settings(max_streams_per_connection=STREAMS))
    yield running
    running.stop(0)


def test_the_blocking_client_loses_no_call_at_four_times_the_stream_limit(server: Running) -> None:
    codes: collections.Counter[str] = collections.Counter()
    lock = threading.Lock()
    start = threading.Barrier(CALLERS)
    # retries=0: a refused stream would show as UNAVAILABLE instead of hiding behind a retry
    with RankingClient(f"127.0.0.1:{server.port}", retries=0, timeout=60) as client:
        def caller() -> None:
            start.wait()
            for _ in range(CALLS_EACH):
                try:
                    client.rank(REQUEST)
                    code = "OK"
                except RankingError as exc:
                    code = str(exc)[:120]
                with lock:
                    codes[code] += 1

        threads = [threading.Thread(target=caller) for _ in range(CALLERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert codes == {"OK": CALLERS * CALLS_EACH}


def test_the_async_client_loses_no_call_at_four_times_the_stream_limit(server: Running) -> None:
    async def run() -> collections.Counter[str]:
        codes: collections.Counter[str] = collections.Counter()
        async with AsyncRankingClient(f"127.0.0.1:{server.port}", retries=0, timeout=60) as client:
            async def caller() -> None:
                for _ in range(CALLS_EACH):
                    try:
                        await client.rank(REQUEST)
                        codes["OK"] += 1
                    except RankingError as exc:
                        codes[str(exc)[:120]] += 1

            await asyncio.gather(*(caller() for _ in range(CALLERS)))
        return codes

    assert asyncio.run(run()) == {"OK": CALLERS * CALLS_EACH}
