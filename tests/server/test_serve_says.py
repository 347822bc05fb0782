"""`memrank serve` says what it does: a first line at once, before the heavy imports; a "ready" line naming the
address to call, once every worker answers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memrank.client import RankingClient
from tests.support.servers import Proc, free_port, start_serve, stop


def _wait_ready(proc: Proc, timeout: float = 60) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [x for x in proc.lines() if str(x["msg"]).startswith("ready: ")]
        if found:
            return found[0]
        assert proc.popen.poll() is None, proc.log.read_text()
        time.sleep(0.05)
    raise AssertionError(f"no ready line: {proc.log.read_text()}")


@pytest.fixture
def held() -> Iterator[int]:
    """A loopback port another process (this one) listens on: `memrank serve` on it loads, then refuses."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def test_the_first_line_comes_before_the_heavy_imports(held: int) -> None:
    """-X importtime writes each import to stderr as it happens, interleaved with the log lines: the first log
    line precedes the import of the configuration model (pydantic), numpy and grpc."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMRANK_")}
    # --print-config would not announce; a refused start (a port in use) ends the run once everything loaded.
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "memrank.cli", "serve", "--address",
                           f"127.0.0.1:{held}", "--metrics-port", "0", "--workers", "1"],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2 and "is in use" in proc.stderr, proc.stderr[-2000:]
    lines = proc.stderr.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("{"))
    assert '"msg": "memrank loading"' in lines[first], lines[first]
    imported = [line.rsplit("|", 1)[-1].strip() for line in lines[:first] if line.startswith("import time:")]
    for heavy in ("pydantic", "numpy", "grpc", "memrank.config"):
        assert heavy not in imported, f"{heavy} was imported before the first log line"
    assert any(line.rsplit("|", 1)[-1].strip() == "pydantic" for line in lines[first:])


def test_ready_comes_last_with_the_address_to_call(tmp_path: Path) -> None:
    proc = start_serve(tmp_path, "--address", "127.0.0.1:0", "--metrics-port", "0")
    try:
        ready = _wait_ready(proc)
        assert ready["msg"] == f"ready: grpc on 127.0.0.1:{proc.port}"
        assert ready["address"] == f"127.0.0.1:{proc.port}" and ready["port"] == proc.port
        assert ready["try"] == f"grpcurl -plaintext 127.0.0.1:{proc.port} list"
        messages = [x["msg"] for x in proc.lines()]
        assert messages[0] == "memrank loading"
        assert messages.index("memrank loading") < messages.index("memrank starting") < messages.index("serving") \
            < messages.index(ready["msg"])
        with RankingClient(str(ready["address"])) as client:
            assert client.health() == "SERVING"
    finally:
        assert stop(proc) == 0


def test_with_workers_ready_waits_for_all_of_them_and_names_a_callable_address(tmp_path: Path) -> None:
    port = free_port()
    proc = start_serve(tmp_path, "--address", f"0.0.0.0:{port}", "--metrics-port", "0", "--workers", "2")
    try:
        ready = _wait_ready(proc)
        assert ready["msg"] == f"ready: grpc on 127.0.0.1:{port}" and ready["workers"] == 2
        messages = [x["msg"] for x in proc.lines()]
        assert messages[:messages.index(ready["msg"])].count("serving") == 2
        assert messages.count(ready["msg"]) == 1
        with RankingClient(f"127.0.0.1:{port}") as client:
            assert client.health() == "SERVING"
    finally:
        assert stop(proc) == 0


def test_no_loading_line_for_print_config_or_a_quiet_log_level(held: int) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMRANK_")}
    for args in (["--print-config"], ["--log-level", "warning", "--print-config"]):
        proc = subprocess.run([sys.executable, "-m", "memrank.cli", "serve", *args], capture_output=True, text=True,
                              timeout=60, env=env)
        assert proc.returncode == 0 and "memrank loading" not in proc.stderr, proc.stderr
    quiet = subprocess.run([sys.executable, "-m", "memrank.cli", "serve", "--log-level", "error", "--address",
                            f"127.0.0.1:{held}", "--workers", "1", "--metrics-port", "0"],
                           capture_output=True, text=True, timeout=60, env=env)
    assert quiet.returncode == 2 and "memrank loading" not in quiet.stderr, quiet.stderr
