"""Servers for tests: settings for an in-process server on a free loopback port, or a real `memrank serve`
subprocess (start, wait for its "serving" line, stop)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO

import pytest

from memrank.config import Settings, load_settings


def free_port() -> int:
    """A loopback port free right now (for tests that must name the port, e.g. several workers)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def loopback_settings(**server: object) -> Settings:
    """Built-in defaults, bound to a free loopback port, metrics off."""
    s = load_settings(env={})
    return replace(s, server=replace(s.server, address="127.0.0.1:0", metrics_port=0, **server))


@dataclass
class Proc:
    """A `memrank serve` subprocess and the port it bound."""

    popen: subprocess.Popen[str]
    port: int
    log: Path
    handle: IO[str]

    def lines(self) -> list[dict[str, object]]:
        """Its structured log lines so far."""
        return [json.loads(x) for x in self.log.read_text().splitlines() if x.startswith("{")]


def start_serve(tmp_path: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 20,
                new_session: bool = False) -> Proc:
    """Start `memrank serve` and wait until it serves: its "serving" log line, or with workers the
    supervisor's "supervising" line and every worker's "serving" line (the supervisor's names the port).
    ``new_session``: in a session and process group of its own (its pid is the group's id)."""
    log = tmp_path / f"serve-{time.monotonic_ns()}.log"
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("MEMRANK_")} | (env or {})
    handle = log.open("w")
    popen = subprocess.Popen([sys.executable, "-m", "memrank.cli", "serve", *args], stdout=handle,
                             stderr=subprocess.STDOUT, text=True, env=full_env, start_new_session=new_session)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        records = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
        serving = [rec for rec in records if rec.get("msg") == "serving"]
        for rec in records:
            # One process: its "serving" line. A supervisor: its "supervising" line (which names the port)
            # once every worker has logged "serving" (the port answers from then on, whatever the load).
            if (rec.get("msg") == "serving" and not any(r.get("msg") == "supervising" for r in records)) or (
                    rec.get("msg") == "supervising" and len(serving) >= int(str(rec.get("workers", 1)))):
                port = int(rec.get("port") or str(rec["address"]).rpartition(":")[2])
                return Proc(popen, port, log, handle)
        if popen.poll() is not None:
            handle.close()
            raise AssertionError(f"memrank serve exited {popen.returncode}: {log.read_text()}")
        time.sleep(0.05)
    popen.kill()
    popen.wait()
    handle.close()
    raise AssertionError(f"memrank serve did not start: {log.read_text()}")


def stop(proc: Proc, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
    """Signal the process and return its exit code."""
    proc.popen.send_signal(sig)
    try:
        return proc.popen.wait(timeout)
    finally:
        if proc.popen.poll() is None:
            proc.popen.kill()
            proc.popen.wait()
        proc.handle.close()


EXIT_SECONDS = 20  # a refused start ends in about a second (imports); a half-started one never does


def process_alive(pid: int) -> bool:
    """``pid`` runs: it exists and is not a zombie (exited, not yet reaped by whoever owns it: gone for a test's
    purpose). A process reaped while its stat is read is gone too (the read then fails with ESRCH)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(") ", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def session_of(sid: int) -> list[int]:
    """Live (not zombie) processes of session ``sid``."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii") as f:
                fields = f.read().rsplit(") ", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[3]) == sid:  # state, ppid, pgrp, session
            out.append(int(entry))
    return out


def port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            s.listen(1)
        except OSError:
            return False
    return True


def refused(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run `memrank serve` that must refuse to start: its exit code and output, once it and everything it
    spawned are gone (killed, and the test failed, when it is still running after EXIT_SECONDS)."""
    log = tmp_path / f"refused-{time.monotonic_ns()}.log"
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("MEMRANK_")} | (env or {})
    with log.open("w") as handle:
        popen = subprocess.Popen([sys.executable, "-m", "memrank.cli", "serve", *args], stdout=handle,
                                 stderr=subprocess.STDOUT, text=True, env=full_env, start_new_session=True)
    try:
        code = popen.wait(EXIT_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(popen.pid, signal.SIGKILL)
        popen.wait()
        pytest.fail(f"memrank serve {' '.join(args)} still running after {EXIT_SECONDS} s:\n{log.read_text()}")
    deadline = time.monotonic() + 5
    while session_of(popen.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = session_of(popen.pid)
    if left:
        os.killpg(popen.pid, signal.SIGKILL)
    assert not left, f"left running: {left}\n{log.read_text()}"
    return code, log.read_text()
