"""A supervisor killed with -9 takes its workers with it, and its metrics directory is cleaned at the next start."""

from __future__ import annotations

import os
import signal
import socket
import tempfile
import time
from pathlib import Path

from memrank.client import RankingClient
from tests.support.servers import free_port, process_alive, start_serve, stop


def _port_free(port: int) -> bool:
    """A new server can listen on the port (SO_REUSEADDR, as grpc's listeners do: connections the exit closed may
    linger in TIME_WAIT, which holds no port for a listener)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_workers_exit_within_two_seconds_of_a_killed_supervisor_and_free_the_port(tmp_path: Path) -> None:
    # A stale directory of a dead server (pid 2^22 + 1 is above Linux's pid_max default): removed at start.
    stale = Path(tempfile.gettempdir()) / "memrank-metrics-4194305-stale"
    stale.mkdir(exist_ok=True)
    port = free_port()
    proc = start_serve(tmp_path, "--address", f"127.0.0.1:{port}", "--metrics-port", "0", "--workers", "2")
    try:
        with RankingClient(f"127.0.0.1:{port}", retries=10) as client:
            assert client.health() == "SERVING"
        deadline = time.monotonic() + 10
        while len([x for x in proc.lines() if x["msg"] == "worker starting"]) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        workers = [int(str(x["pid"])) for x in proc.lines() if x["msg"] == "worker starting"]
        assert len(workers) == 2 and all(process_alive(p) for p in workers)
        assert not stale.exists()
        proc.popen.send_signal(signal.SIGKILL)
        proc.popen.wait(5)
        killed = time.monotonic()
        while any(process_alive(p) for p in workers) and time.monotonic() - killed < 5:
            time.sleep(0.05)
        gone_after = time.monotonic() - killed
        assert not any(process_alive(p) for p in workers), "workers outlived their supervisor"
        assert gone_after <= 2.0, gone_after
        # The kernel finishes closing the exited workers' sockets a moment after they are gone (seen on a loaded CI
        # machine): a new server can bind the port within two more seconds.
        freed = time.monotonic() + 2.0
        while not _port_free(port) and time.monotonic() < freed:
            time.sleep(0.05)
        assert _port_free(port)
        assert any(x["msg"] == "supervisor gone; draining" for x in proc.lines())
    finally:
        if proc.popen.poll() is None:
            stop(proc)
        proc.handle.close()
        if stale.exists():
            stale.rmdir()


def test_a_worker_that_does_not_stop_is_killed_past_the_grace_period_and_the_supervisor_exits(tmp_path: Path) -> None:
    # One worker is stopped (SIGSTOP): it cannot act on the supervisor's SIGTERM, as a worker wedged in a
    # native call could not. The supervisor must kill it once grace + 5 s have passed, say so, and exit.
    port = free_port()
    proc = start_serve(tmp_path, "--address", f"127.0.0.1:{port}", "--metrics-port", "0", "--workers", "2",
                       env={"MEMRANK_GRACE_PERIOD_SECONDS": "0"})
    wedged = 0
    try:
        workers = [int(str(x["pid"])) for x in proc.lines() if x["msg"] == "worker starting"]
        assert len(workers) == 2
        wedged = workers[0]
        os.kill(wedged, signal.SIGSTOP)
        asked = time.monotonic()
        proc.popen.send_signal(signal.SIGTERM)
        code = proc.popen.wait(20)
        took = time.monotonic() - asked
        assert code == 0
        assert 5.0 <= took < 12.0, took  # not before grace (0) + 5 s, and not hanging after
        assert not process_alive(wedged)
        killed = [x for x in proc.lines() if x["msg"] == "worker did not stop within the grace period; killed"]
        assert [(x["level"], x["pid"]) for x in killed] == [("error", wedged)]
        assert proc.lines()[-1]["msg"] == "stopped"
    finally:
        if wedged and process_alive(wedged):
            os.kill(wedged, signal.SIGKILL)
        if proc.popen.poll() is None:
            stop(proc, signal.SIGKILL)
        proc.handle.close()
