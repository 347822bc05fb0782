"""A client of the suite's shared in-process server (``live_server``, from tests/support/plugin.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memrank.client import RankingClient
from memrank.grpc.running import Running


@pytest.fixture()
def client(live_server: Running) -> Iterator[RankingClient]:
    """A client of the shared in-process server."""
    with RankingClient(f"127.0.0.1:{live_server.port}", timeout=10) as c:
        yield c
