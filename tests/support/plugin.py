"""The fixtures every test folder may use, registered for the whole suite by tests/conftest.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memrank.grpc.running import Running
from memrank.grpc.server import create_server
from tests.support.servers import loopback_settings


@pytest.fixture(scope="session")
def live_server() -> Iterator[Running]:
    """One in-process server on the built-in configuration."""
    running = create_server(loopback_settings())
    yield running
    running.stop(0)
