"""Startup fails loudly and cleanly (issue 24 §2): a port another process holds is refused, naming its key,
with nothing left running; the first log line says what the server runs as.

Every test runs a real `memrank serve` in a session of its own, so that whatever it spawned (workers, the
resource tracker) can be found afterwards by session id.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

import memrank
from memrank.client import RankingClient
from tests.support.servers import Proc, free_port, port_free, refused, start_serve, stop


@pytest.fixture()
def held() -> Iterator[socket.socket]:
    """A port another process holds: a plain listening socket, as any other server's."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield s


def _first(proc: Proc, timeout: float = 60) -> Proc:
    """Wait until the running server answers: its "ready" line (every worker serves), then a health check."""
    deadline = time.monotonic() + timeout
    try:
        while not any(str(x["msg"]).startswith("ready: ") for x in proc.lines()):
            assert proc.popen.poll() is None and time.monotonic() < deadline, proc.log.read_text()
            time.sleep(0.05)
        with RankingClient(f"127.0.0.1:{proc.port}", retries=10) as client:
            assert client.health() == "SERVING"
    except BaseException:
        stop(proc)  # the caller never gets it to stop: a failed wait must not leave a server running
        raise
    return proc


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_port_held_by_another_process_is_refused_naming_server_address(
        tmp_path: Path, held: socket.socket, workers: str) -> None:
    port = held.getsockname()[1]
    code, out = refused(tmp_path, "--address", f"127.0.0.1:{port}", "--metrics-port", "0", "--workers", workers)
    assert code == 2, out
    assert f"memrank: server.address 127.0.0.1:{port} is in use" in out
    assert "Traceback" not in out and "add_port.cc" not in out, out  # ours alone, not grpc's or Python's


def test_a_port_bound_but_not_listening_isrefused(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        code, out = refused(tmp_path, "--address", f"127.0.0.1:{port}", "--metrics-port", "0", "--workers", "2")
    assert code == 2 and f"server.address 127.0.0.1:{port} is in use" in out, out


@pytest.mark.parametrize(("first", "second"), [("2", "2"), ("2", "1"), ("1", "2")])
def test_a_second_memrank_serve_on_the_same_port_is_refused_and_the_first_keeps_all_traffic(
        tmp_path: Path, first: str, second: str) -> None:
    port = free_port()
    proc = _first(start_serve(tmp_path, "--address", f"127.0.0.1:{port}", "--metrics-port", "0",
                              "--workers", first))
    try:
        code, out = refused(tmp_path, "--address", f"127.0.0.1:{port}", "--metrics-port", "0",
                             "--workers", second)
        assert code == 2, out
        assert f"memrank: server.address 127.0.0.1:{port} is in use" in out
        for _ in range(12):  # fresh connections: all answered by the first server, which the attempt left alone
            with RankingClient(f"127.0.0.1:{port}", retries=0, timeout=5) as client:
                assert client.health() == "SERVING"
    finally:
        assert stop(proc) == 0
    assert port_free(port)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_held_metrics_port_is_refused_before_any_worker_starts(
        tmp_path: Path, held: socket.socket, workers: str) -> None:
    metrics = held.getsockname()[1]
    port = free_port()
    code, out = refused(tmp_path, "--address", f"127.0.0.1:{port}", "--metrics-port", str(metrics),
                         "--workers", workers)
    assert code == 2, out
    assert f"memrank: server.metrics_port 127.0.0.1:{metrics} is in use" in out
    assert "serving" not in out and "worker starting" not in out, out  # nothing answered on the gRPC port
    assert port_free(port)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_held_health_address_is_refused_naming_it(tmp_path: Path, held: socket.socket, workers: str) -> None:
    health = held.getsockname()[1]
    port = free_port()
    code, out = refused(tmp_path, "--address", f"127.0.0.1:{port}", "--metrics-port", "0", "--workers", workers,
                         env={"MEMRANK_HEALTH_ADDRESS": f"127.0.0.1:{health}"})
    assert code == 2, out
    assert f"memrank: server.health_address 127.0.0.1:{health} is in use" in out
    assert port_free(port)


def test_the_first_log_line_says_version_sources_and_addresses_and_workers_say_who_serves_metrics(
        tmp_path: Path) -> None:
    port, metrics = free_port(), free_port()
    config = tmp_path / "memrank.yaml"
    config.write_text("server:\n  grace_period_seconds: 5\n", encoding="utf-8")
    tokens = tmp_path / "secret-tokens-path"
    tokens.write_text("s3cret-token-value\n", encoding="utf-8")
    proc = start_serve(tmp_path, "--config", str(config), "--address", f"127.0.0.1:{port}", "--workers", "2",
                       env={"MEMRANK_METRICS_PORT": str(metrics), "MEMRANK_AUTH_TOKEN_FILE": str(tokens)})
    try:
        _first(proc)
        deadline = time.monotonic() + 10
        while len([x for x in proc.lines() if x["msg"] == "worker starting"]) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        lines = proc.lines()
        assert lines[0]["msg"] == "memrank loading", lines[0]  # at once, before the configuration is read
        (first,) = [x for x in lines if x["msg"] == "memrank starting"]
        assert lines.index(first) == 1, lines[:3]
        assert first["version"] == memrank.__version__
        assert first["config_sources"] == ["built-in defaults", f"file {config} (--config)",
                                           "env MEMRANK_METRICS_PORT, MEMRANK_AUTH_TOKEN_FILE",
                                           "flags --address, --workers"]
        assert first["address"] == f"127.0.0.1:{port}"
        assert first["metrics"] == f"http://127.0.0.1:{metrics}/metrics"
        assert "secret" not in json.dumps(first), first  # names of variables, never their values
        workers = [x for x in lines if x["msg"] == "worker starting"]
        assert len(workers) == 2
        assert all(x["metrics"] == f"served by the supervisor (http://127.0.0.1:{metrics}/metrics)"
                   for x in workers), workers
        assert not [x for x in lines if "metrics endpoint disabled" in str(x["msg"])]
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics}/metrics", timeout=5) as r:
            assert b"memrank_" in r.read()
    finally:
        assert stop(proc) == 0
