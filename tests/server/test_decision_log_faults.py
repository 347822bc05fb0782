"""The decision log under faults (issue 32, items 1-5): nothing it was handed is lost without being counted.
Live servers on loopback, real files, real writer processes."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.client import RankingClient, RankingError
from memrank.config import DecisionLogSettings, Settings
from memrank.core.errors import ConfigError
from memrank.decisions.log import DecisionLog
from memrank.decisions.sink import FileSink
from memrank.grpc.server import create_server
from tests.support.servers import free_port, loopback_settings, process_alive, refused


def logging_settings(path: Path, **log: Any) -> Settings:
    s = loopback_settings()
    return replace(s, decision_log=DecisionLogSettings(enabled=True, sink="file", path=str(path), **log))


def wait_for_lines(path: Path, n: int, timeout: float = 20.0) -> list[dict[str, Any]]:
    """The file's records once it holds ``n`` (AssertionError naming what it holds after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        lines = path.read_text().splitlines() if path.exists() else []
        if len(lines) >= n or time.monotonic() > deadline:
            assert len(lines) >= n, f"{len(lines)} of {n} records written after {timeout} s"
            return [json.loads(line) for line in lines]
        time.sleep(0.05)


def small_request(request_id: str) -> pb.RankRequest:
    return pb.RankRequest(request_id=request_id, query="tea", log_decision=True,
                          candidates=[pb.Candidate(id="m1", content="tea", retrieval_score=0.9)])


def test_small_records_are_written_while_the_server_runs_not_at_shutdown(tmp_path: Path) -> None:
    path = tmp_path / "decisions.jsonl"
    running = create_server(logging_settings(path))
    try:
        with RankingClient(f"127.0.0.1:{running.port}", retries=0) as c:
            resp = c.rank(small_request("s/1"))
            assert resp.decision_logged
            assert [r["schema"] for r in wait_for_lines(path, 1)] == ["memrank.decision.v1"]
            c.record_feedback(resp, {"m1": 2})
            assert [r["schema"] for r in wait_for_lines(path, 2)][1] == "memrank.feedback.v1"
    finally:
        running.stop(5)


# ---------------------------------------------------------------- a sink that cannot be written, refused at start


def _sink_case(tmp_path: Path, case: str) -> tuple[str, str]:
    """(decision_log.path, what the refusal says about it)."""
    if case == "a directory":
        (tmp_path / "logs").mkdir()
        return str(tmp_path / "logs"), "Is a directory"
    if case == "under /proc":
        return "/proc/memrank-decisions.jsonl", "No such file or directory"
    if case == "an unwritable folder":
        folder = tmp_path / "ro"
        folder.mkdir()
        folder.chmod(0o555)
        return str(folder / "decisions.jsonl"), "Permission denied"
    target = tmp_path / "elsewhere.jsonl"
    link = tmp_path / "decisions.jsonl"
    if case == "a symbolic link":
        link.symlink_to(target)
        return str(link), f"'{link}' is a symbolic link (refused"
    (tmp_path / "decisions.jsonl.lock").symlink_to(target)
    return str(link), f"'{link}.lock' is a symbolic link (refused"


@pytest.mark.parametrize(("case", "workers"), [
    ("a directory", "1"), ("a directory", "2"), ("under /proc", "2"), ("a symbolic link", "1"),
    ("a symbolic link", "2"), ("its lock a symbolic link", "2"),
    pytest.param("an unwritable folder", "2", marks=pytest.mark.skipif(os.geteuid() == 0, reason="root writes"))])
def test_a_sink_that_cannot_be_written_is_refused_at_start_naming_decision_log_path(
        tmp_path: Path, case: str, workers: str) -> None:
    path, why = _sink_case(tmp_path, case)
    code, out = refused(tmp_path, "--address", f"127.0.0.1:{free_port()}", "--metrics-port", "0",
                         "--workers", workers, env={"MEMRANK_DECISION_LOG_ENABLED": "true",
                                                    "MEMRANK_DECISION_LOG_SINK": "file",
                                                    "MEMRANK_DECISION_LOG_PATH": path})
    assert code == 2, out
    assert out.count(f"memrank: configuration error: decision_log.path: cannot write '{path}'") == 1, out
    assert why in out and "worker starting" not in out and "Traceback" not in out, out
    assert not (tmp_path / "elsewhere.jsonl").exists()  # a link is never followed


def test_an_in_process_server_refuses_a_symbolic_link_too(tmp_path: Path) -> None:
    link = tmp_path / "decisions.jsonl"
    link.symlink_to(tmp_path / "elsewhere.jsonl")
    with pytest.raises(ConfigError, match=r"decision_log\.path: cannot write .* is a symbolic link"):
        create_server(logging_settings(link))
    assert not (tmp_path / "elsewhere.jsonl").exists()


# ---------------------------------------------------------------- readers skip a torn last record


def _labelled_log(path: Path, sessions: int = 4) -> None:
    running = create_server(logging_settings(path))
    try:
        with RankingClient(f"127.0.0.1:{running.port}", retries=0) as c:
            for s in range(sessions):
                for q in range(2):
                    req = pb.RankRequest(request_id=f"s{s}/q{q}", query="tea and trains", log_decision=True,
                                         candidates=[pb.Candidate(id=f"m{i}", content=f"note {i} about tea",
                                                                  retrieval_score=0.2 + 0.1 * i) for i in range(6)])
                    c.record_feedback(c.rank(req), {"m1": 2, "m4": 0})
    finally:
        running.stop(5)


@pytest.mark.parametrize("command", ["tune", "eval"])
def test_readers_skip_a_torn_last_record_and_say_so(tmp_path: Path, command: str) -> None:
    path = tmp_path / "decisions.jsonl"
    _labelled_log(path)
    whole = path.read_text()
    with path.open("a") as f:  # a writer killed in the middle of a line
        f.write(whole.splitlines()[0][:150])
    n = len(whole.splitlines()) + 1
    args = (["--out", str(tmp_path / "tuned.yaml"), "--folds", "2", "--no-progress"] if command == "tune"
            else ["--out", str(tmp_path / "report.json"), "--profiles", "default"])
    run = subprocess.run([sys.executable, "-m", "memrank.cli", command, "--log", str(path), *args],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "8 decisions, 8 feedback records" in run.stdout, run.stdout
    assert f"1 torn record line skipped ({path}:{n})" in run.stdout, run.stdout


def test_a_new_writer_starts_after_a_torn_line_on_a_line_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "decisions.jsonl"
    path.write_text('{"schema":"memrank.decision.v1","decision_id":"ab')  # torn, no newline
    running = create_server(logging_settings(path))
    try:
        with RankingClient(f"127.0.0.1:{running.port}", retries=0) as c:
            c.rank(small_request("after/1"))
    finally:
        running.stop(5)
    lines = path.read_text().splitlines()
    assert lines[0] == '{"schema":"memrank.decision.v1","decision_id":"ab' and len(lines) == 2
    assert json.loads(lines[1])["request_id"] == "after/1"


def test_a_writer_starting_while_another_is_in_mid_line_waits_for_its_lock(tmp_path: Path) -> None:
    """A second worker's writer starting while the first holds the lock in mid-line must not take the line for a
    torn one: it waits for the lock (it once read the last byte without it and put a newline into the line)."""
    path = tmp_path / "decisions.jsonl"
    lock = os.open(f"{path}.lock", os.O_WRONLY | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    with path.open("ab") as f:
        f.write(b'{"request_id":"first","part":')  # the first writer, in mid-line
    opened: list[FileSink] = []
    second = threading.Thread(target=lambda: opened.append(FileSink(str(path), 1 << 20, 0)))
    second.start()
    second.join(0.5)
    assert second.is_alive()  # waiting for the lock
    with path.open("ab") as f:
        f.write(b'"whole"}\n')
    fcntl.flock(lock, fcntl.LOCK_UN)
    os.close(lock)
    second.join(5)
    opened[0].write(b'{"request_id":"second"}\n')
    opened[0].close()
    assert [json.loads(line)["request_id"] for line in path.read_text().splitlines()] == ["first", "second"]


# ---------------------------------------------------------------- a writer that dies, a writer that stalls


def _kill(log: DecisionLog, deadline: float) -> int:
    """SIGKILL the writer and wait until it is gone (a record sent before it is dead is lost with it, counted:
    waiting makes every flag that follows decided); its pid."""
    first = log.writer_pid
    os.kill(first, signal.SIGKILL)
    while process_alive(first) and time.monotonic() < deadline:
        time.sleep(0.005)
    return first


def _kill_and_call_until_restarted(c: RankingClient, log: DecisionLog, path: Path, flags: dict[str, bool],
                                   tag: str, twice: bool = False) -> None:
    """SIGKILL the writer (``twice``: and its replacement as soon as it starts, so that the next start waits for
    RESTART_SECONDS), then log small decisions until another writer has logged one."""
    deadline = time.monotonic() + 20
    first = _kill(log, deadline)
    if twice:
        while log.writer_pid == first and time.monotonic() < deadline:
            time.sleep(0.001)
        first = _kill(log, deadline)
    k = 0
    while time.monotonic() < deadline and (log.writer_pid == first or not flags.get(f"{tag}-{k - 1}")):
        flags[f"{tag}-{k}"] = c.rank(small_request(f"{tag}-{k}")).decision_logged
        k += 1
        time.sleep(0.02)
    assert log.writer_pid != first, "the writer was not restarted"
    assert flags[f"{tag}-{k - 1}"], "nothing logged after the restart"
    while f'"request_id":"{tag}-{k - 1}"' not in path.read_text() and time.monotonic() < deadline:
        time.sleep(0.02)  # written, not only handed over: the next kill must not take it along


def test_a_killed_writer_is_noticed_restarted_and_the_gap_counted(tmp_path: Path) -> None:
    path = tmp_path / "decisions.jsonl"
    registry = CollectorRegistry()
    running = create_server(logging_settings(path), registry)
    flags: dict[str, bool] = {}
    log = running.service.decisions
    assert log is not None
    try:
        with RankingClient(f"127.0.0.1:{running.port}", retries=0) as c:
            flags["before"] = c.rank(small_request("before")).decision_logged
            wait_for_lines(path, 1)
            _kill_and_call_until_restarted(c, log, path, flags, "first")  # restarted at once: often no gap
            _kill_and_call_until_restarted(c, log, path, flags, "again", twice=True)  # the next start waits: a gap
    finally:
        running.stop(5)
    written = {r["request_id"] for r in map(json.loads, path.read_text().splitlines())}
    assert written == {rid for rid, ok in flags.items() if ok}  # decision_logged tells the truth both ways
    down = registry.get_sample_value("memrank_decision_log_dropped_total", {"reason": "writer_down"}) or 0
    refused = sum(not ok for ok in flags.values())
    assert down == refused and refused > 0, (down, refused)  # the gap: every refused record, counted
    assert log.restarts == 3


def test_feedback_has_a_queue_of_its_own_that_decisions_cannot_fill(tmp_path: Path) -> None:
    path = tmp_path / "decisions.jsonl"
    registry = CollectorRegistry()
    running = create_server(logging_settings(path, queue_size=2, content="plain"), registry)
    log = running.service.decisions
    assert log is not None
    answers: list[str] = []
    try:
        with RankingClient(f"127.0.0.1:{running.port}", retries=0, timeout=30) as c:
            resp = c.rank(small_request("labelled"))
            wait_for_lines(path, 1)
            os.kill(log.writer_pid, signal.SIGSTOP)  # a writer that stalls: the pipe, then the queues, fill
            try:
                big = [pb.Candidate(id=f"m{i}", content="x" * 2000, retrieval_score=0.5) for i in range(200)]
                refused = 0
                for k in range(60):
                    ok = c.rank(pb.RankRequest(request_id=f"flood-{k}", query="q", log_decision=True,
                                               candidates=big)).decision_logged
                    refused += not ok
                    if refused >= 3:
                        break
                assert refused >= 3, "the decisions queue never filled"
                for grade in (1, 2, 3):
                    try:
                        c.record_feedback(resp, {"m1": grade})
                        answers.append("OK")
                    except RankingError as err:
                        answers.append(err.code.name)
            finally:
                os.kill(log.writer_pid, signal.SIGCONT)
    finally:
        running.stop(10)
    assert answers == ["OK", "OK", "UNAVAILABLE"], answers  # two fit feedback's own queue of 2; the third not
    grades = [r["labels"][0]["relevance"] for r in map(json.loads, path.read_text().splitlines())
              if r["schema"] == "memrank.feedback.v1"]
    assert sorted(grades) == [1, 2]
    full = registry.get_sample_value("memrank_decision_log_dropped_total", {"reason": "queue_full"})
    assert full is not None and full >= 4  # the refused decisions and the third feedback
