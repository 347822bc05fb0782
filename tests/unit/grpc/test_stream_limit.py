"""The server's stream limit per connection and the shipped clients agree (issue #32, item 6): every client's
documented default concurrency is the server's default ``server.max_streams_per_connection``, its README says so,
and the server announces the limit with grpc core's overload protection off (so a client that waits for a free
stream is never refused). The Go, TypeScript and Java clients' tests run 4 x that many calls on one connection
against a live server (clients/test.sh)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memrank.config import load_settings
from memrank.grpc.server import _connection_options

CLIENTS = Path(__file__).resolve().parents[3] / "clients"
# Where each client declares its default concurrency, and the declaration.
DECLARED = {
    "go": ("go/memrank/client.go", r"DefaultConcurrency = (\d+)"),
    "typescript": ("typescript/src/client.ts", r"export const DEFAULT_CONCURRENCY = (\d+);"),
    "java": ("java/src/main/java/dev/memrank/client/RankingClient.java",
             r"public static final int DEFAULT_CONCURRENCY = (\d+);"),
}


def default_limit() -> int:
    return load_settings(env={}).server.max_streams_per_connection


@pytest.mark.parametrize("client", sorted(DECLARED))
def test_each_client_default_concurrency_is_the_server_stream_limit(client: str) -> None:
    path, pattern = DECLARED[client]
    found = re.findall(pattern, (CLIENTS / path).read_text(encoding="utf-8"))
    assert [int(n) for n in found] == [default_limit()], f"clients/{path}"
    readme = " ".join((CLIENTS / client / "README.md").read_text(encoding="utf-8").split())
    assert f"{default_limit()} calls at once" in readme, f"clients/{client}/README.md does not state the limit"


def test_the_server_announces_the_limit_without_overload_protection() -> None:
    settings = load_settings(env={}, overrides={"server.max_streams_per_connection": 7}).server
    options = dict(_connection_options(settings, reuse_port=False))
    assert options["grpc.max_concurrent_streams"] == 7
    assert options["grpc.http.overload_protection"] == 0
