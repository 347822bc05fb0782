"""Signals before Python runs (issue #41, item 1): `memrank serve` blocks SIGHUP, SIGTERM and SIGINT as its
first instruction, but the interpreter starts for 0.1-0.6 s before that, and a signal then ended the process.
Started through coreutils' `env --block-signal=HUP,TERM,INT` (the image's entrypoint, the chart's command),
the block is in place milliseconds after the exec and memrank inherits it: a SIGHUP that comes before any
handler waits for it and reloads, a SIGTERM drains.

Each run is a real `env --block-signal=... memrank serve` (the console script beside this interpreter). The
moment of each signal is measured from the launcher's block (read from /proc, so the test has no race), and
the test checks that no handler was in place yet when it was sent: the signal came in the window.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.servers import free_port, session_of

LAUNCHER = ("env", "--block-signal=HUP,TERM,INT")
HELD = (1 << (signal.SIGHUP - 1)) | (1 << (signal.SIGTERM - 1)) | (1 << (signal.SIGINT - 1))
# (signal, seconds after the launcher's block): all before memrank's first line (0.1 s or more on an idle machine).
# With workers the moment changes nothing more: the supervisor holds the signal until its handler, then passes it on.
MOMENTS = {1: [(signal.SIGHUP, 0.0), (signal.SIGHUP, 0.01), (signal.SIGHUP, 0.05), (signal.SIGTERM, 0.0)],
           2: [(signal.SIGHUP, 0.0), (signal.SIGTERM, 0.0)]}
WAIT_SECONDS = 60  # for a start: about 1.5 s on an idle 2-core machine, 25 s seen when 8 test runs shared it


def _memrank() -> list[str]:
    """The `memrank` console script of this interpreter's environment (what the image runs), else the module."""
    script = Path(sys.executable).parent / "memrank"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "memrank.cli"]


def _mask(pid: int, field: str) -> int:
    """A signal mask of /proc/<pid>/status ("SigBlk", "SigCgt"); 0 once the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1], 16)
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def _launch(tmp_path: Path, name: str, workers: int) -> tuple[subprocess.Popen[str], Path]:
    """`env --block-signal=HUP,TERM,INT memrank serve` on a free port, returned once the block is in."""
    log = tmp_path / f"{name}.log"
    # A supervisor stopped while its workers load waits the grace period for them to start and drain.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMRANK_")} | {
        "MEMRANK_GRACE_PERIOD_SECONDS": str(WAIT_SECONDS)}
    port = "0" if workers == 1 else str(free_port())
    with log.open("w") as handle:
        popen = subprocess.Popen([*LAUNCHER, *_memrank(), "serve", "--address", f"127.0.0.1:{port}",
                                  "--metrics-port", "0", "--workers", str(workers)],
                                 stdout=handle, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
    deadline = time.monotonic() + 5
    while _mask(popen.pid, "SigBlk") & HELD != HELD:  # env blocks them just before it execs memrank
        assert popen.poll() is None and time.monotonic() < deadline, log.read_text()
    return popen, log


def _signal_early(popen: subprocess.Popen[str], sig: signal.Signals, after: float) -> None:
    """Send ``sig`` ``after`` seconds past the launcher's block, checking that no handler of memrank was in yet."""
    time.sleep(after)
    assert not _mask(popen.pid, "SigCgt") & (1 << (sig - 1)), f"{sig.name} at {after:g} s came after the handler"
    popen.send_signal(sig)


def _records(log: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in log.read_text().splitlines() if x.startswith("{")]


def _wait_for(popen: subprocess.Popen[str], log: Path, done: Callable[[list[dict[str, object]]], bool],
              timeout: float = WAIT_SECONDS) -> None:
    """Wait until ``done`` holds of its log records; fail if it ends first."""
    deadline = time.monotonic() + timeout
    while not done(_records(log)):
        assert popen.poll() is None, f"exit {popen.returncode}:\n{log.read_text()}"
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.02)


def _end(popen: subprocess.Popen[str]) -> int:
    """SIGTERM, then its exit status."""
    if popen.poll() is None:
        popen.send_signal(signal.SIGTERM)
    return _waited(popen)


def _reloads(records: list[dict[str, object]]) -> list[int]:
    """The pids that ran a reload asked for by SIGHUP."""
    return [int(str(r.get("pid", 0))) for r in records
            if str(r.get("msg", "")).startswith("reload") and r.get("why") == "SIGHUP"]


@pytest.mark.parametrize("workers", [1, 2])
def test_an_early_sighup_reloads_and_an_early_sigterm_drains(tmp_path: Path, workers: int) -> None:
    """SIGHUP 0, 10 or 50 ms after the launcher's block, before any handler: the server lives, every worker
    reloads once it has its handler (a supervisor passes the signal on), and a later SIGTERM drains. SIGTERM
    at 0 ms: the server starts, drains once its handlers are in, exits 0. The runs go side by side (each
    signal is timed from its own process's block), so the test takes about one start, not four."""
    runs = []
    try:
        for sig, after in MOMENTS[workers]:
            popen, log = _launch(tmp_path, f"{sig.name}-{workers}-{after:g}", workers)
            runs.append((sig, popen, log))
            _signal_early(popen, sig, after)
        for sig, popen, log in runs:
            if sig == signal.SIGHUP:
                _wait_for(popen, log, lambda rs: len(_reloads(rs)) >= workers)
    finally:
        codes = [_end(popen) if sig == signal.SIGHUP else _waited(popen) for sig, popen, log in runs]
    for (sig, popen, log), code in zip(runs, codes, strict=True):
        records = _records(log)
        serving = {int(str(r["pid"])) for r in records if r.get("msg") == "serving"}
        assert len(serving) == workers, log.read_text()
        if sig == signal.SIGHUP:  # each worker reloaded once, none died (a restart would log another "serving")
            assert sorted(_reloads(records)) == sorted(serving), log.read_text()
        assert code == 0 and any(r.get("msg") == "draining" for r in records), f"exit {code}:\n{log.read_text()}"
        assert _session_ends(popen.pid), log.read_text()  # workers, writers, the resource tracker: all gone


def _session_ends(sid: int, timeout: float = 5) -> bool:
    """True once no process of session ``sid`` runs (the resource tracker ends once its pipe closes)."""
    deadline = time.monotonic() + timeout
    while session_of(sid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not session_of(sid)


def _waited(popen: subprocess.Popen[str]) -> int:
    """Its exit status once it has ended by itself (killed after WAIT_SECONDS)."""
    try:
        return popen.wait(WAIT_SECONDS)
    finally:
        if popen.poll() is None:
            popen.kill()
            popen.wait()
