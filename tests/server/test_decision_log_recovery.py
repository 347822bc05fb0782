"""The decision log's writer under faults of its sink and its own death (issue 41, items 3-6): it recovers by
itself, leaves no glued line, notices copytruncate, and a loss after a true answer is counted apart from the
refusals. Live servers on loopback, real files, real writer processes; the faults are real (an immutable
folder, a full tmpfs, a truncation, SIGKILL)."""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.client import RankingClient
from memrank.config import DecisionLogSettings
from memrank.grpc.server import create_server
from tests.server.test_decision_log_faults import logging_settings, small_request, wait_for_lines
from tests.support.servers import free_port, process_alive, start_serve, stop


def _value(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def _failures(registry: CollectorRegistry) -> float:
    return sum(s.value for m in registry.collect() if m.name == "memrank_decision_log_write_failures"
               for s in m.samples if s.name.endswith("_total"))


def _wait(what: str, check: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what}: not after {timeout} s"
        time.sleep(0.02)


def _ids(*paths: Path) -> list[str]:
    """request_id of every line (each must parse: a glued or torn line fails here)."""
    return [json.loads(line)["request_id"] for p in paths if p.exists() for line in p.read_text().splitlines()]


def _killed_ids(path: Path, kills: int = 10) -> list[str]:
    """request_id of every whole line of a file whose writers were SIGKILLed ``kills`` times. A writer killed in
    mid-write leaves the start of its record, which the next writer ends with a newline (a line of its own,
    skipped by readers; the record counted lost_after_ack): at most one such line a kill, never two records
    glued on one line."""
    ids, torn = [], 0
    for line in path.read_text().splitlines():
        try:
            ids.append(json.loads(line)["request_id"])
        except ValueError:
            assert line.startswith('{"schema":"memrank.decision.v1"') and line.count('"schema"') == 1, line[:200]
            torn += 1
    assert torn <= kills, torn
    return ids


def _ends_with_line(path: Path, request_id: str) -> bool:
    """The file's last line is whole and is the record of ``request_id`` (read once: no torn read)."""
    data = path.read_bytes() if path.exists() else b""
    return data.endswith(b"\n") and f'"request_id":"{request_id}"'.encode() in data.rsplit(b"\n", 2)[-2]


def _chattr(flag: str, path: Path) -> bool:
    return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0


# ---------------------------------------------------------------- a folder unwritable for a while (item 3)


@pytest.mark.parametrize("fault", ["an immutable folder", "a directory at the path"])
def test_a_writer_whose_reopen_fails_retries_and_writes_again_once_the_fault_clears(
        tmp_path: Path, capfd: pytest.CaptureFixture[str], fault: str) -> None:
    """The issue's fault: the file renamed away (a rotation), then the folder made immutable (or a directory
    put at the path), then cleared. Each failed attempt is counted, the failing is logged once, and every call
    answered true has its record once it clears (main: "Bad file descriptor" on every record until restart)."""
    folder = tmp_path / "logs"
    folder.mkdir()
    path = folder / "decisions.jsonl"
    immutable = fault == "an immutable folder"
    if immutable and not (_chattr("+i", folder) and _chattr("-i", folder)):
        pytest.skip("chattr +i not available here (needs root on ext2/3/4, xfs or btrfs)")
    registry = CollectorRegistry()
    running = create_server(logging_settings(path), registry)
    flags: dict[str, bool] = {}
    try:
        with RankingClient(f"127.0.0.1:{running.port}", retries=0) as c:
            flags["before"] = c.rank(small_request("before")).decision_logged
            wait_for_lines(path, 1)
            os.rename(path, folder / "decisions.old")
            assert _chattr("+i", folder) if immutable else path.mkdir() is None
            try:
                for k in range(10):
                    flags[f"during-{k}"] = c.rank(small_request(f"during-{k}")).decision_logged
                with contextlib.suppress(AssertionError):  # a few attempts failed: or a second passed
                    _wait("", lambda: _failures(registry) >= 3, timeout=1.0)
            finally:
                assert _chattr("-i", folder) if immutable else path.rmdir() is None
            flags["after"] = c.rank(small_request("after")).decision_logged
            _wait("the records written again", lambda: _ends_with_line(path, "after"))
    finally:
        running.stop(5)
    assert all(flags.values()), flags  # 11 records fit the queue: none refused
    assert sorted(_ids(folder / "decisions.old", path)) == sorted(flags)
    error = "EPERM" if immutable else "EISDIR"
    assert _value(registry, "memrank_decision_log_write_failures_total", error=error) >= 3
    assert _value(registry, "memrank_decision_log_records_total", kind="decision") == len(flags)
    err = capfd.readouterr().err
    assert err.count("decision log write failed; retrying") == 1, err  # not one line per record or attempt
    assert err.count("decision log writable again") == 1 and "Bad file descriptor" not in err, err


def test_a_writer_started_while_the_folder_is_unwritable_waits_for_it_without_leaking(tmp_path: Path) -> None:
    """A writer restarted (its predecessor killed) while its file is renamed away and the folder immutable:
    it retries its start (the same back-off, counted) with a constant number of open descriptors, takes the
    records meanwhile, and writes them once the folder is writable again."""
    folder = tmp_path / "logs"
    folder.mkdir()
    path = folder / "decisions.jsonl"
    if not (_chattr("+i", folder) and _chattr("-i", folder)):
        pytest.skip("chattr +i not available here (needs root on ext2/3/4, xfs or btrfs)")
    registry = CollectorRegistry()
    running = create_server(logging_settings(path), registry)
    log = running.service.decisions
    assert log is not None
    flags: dict[str, bool] = {}
    try:
        with RankingClient(f"127.0.0.1:{running.port}", retries=0) as c:
            flags["before"] = c.rank(small_request("before")).decision_logged
            wait_for_lines(path, 1)
            os.rename(path, folder / "decisions.old")
            assert _chattr("+i", folder)
            try:
                first = log.writer_pid
                os.kill(first, signal.SIGKILL)
                _wait("a new writer", lambda: log.writer_pid != first)
                fds = f"/proc/{log.writer_pid}/fd"
                _wait("its start failing", lambda: _failures(registry) >= 2)
                opened = len(os.listdir(fds))
                _wait("its start failing on", lambda: _failures(registry) >= 5)
                assert len(os.listdir(fds)) == opened  # no descriptor left behind by a failed start
                for k in range(5):
                    flags[f"during-{k}"] = c.rank(small_request(f"during-{k}")).decision_logged
            finally:
                assert _chattr("-i", folder)
            flags["after"] = c.rank(small_request("after")).decision_logged
            _wait("the records written", lambda: _ends_with_line(path, "after"))
    finally:
        running.stop(5)
    assert all(flags.values()), flags
    assert sorted(_ids(folder / "decisions.old", path)) == sorted(flags)
    assert _value(registry, "memrank_decision_log_write_failures_total", error="EPERM") >= 5


# ---------------------------------------------------------------- a full disk (item 4)


@pytest.fixture()
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs: a disk that fills."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _fill(folder: Path) -> Path:
    """Fill the file system under ``folder`` to the last byte; the filler (remove it to free the space)."""
    filler = folder / "filler"
    with filler.open("wb", buffering=0) as f, contextlib.suppress(OSError):
        while True:
            f.write(b"\0" * 512)
    return filler


def big_request(request_id: str) -> pb.RankRequest:
    """A record of about 9 KB: more than the free part of any page, so a full disk tears it."""
    return pb.RankRequest(request_id=request_id, query="tea", log_decision=True,
                          candidates=[pb.Candidate(id=f"m{i}", content=f"tea {i}", retrieval_score=0.5)
                                      for i in range(12)])


def test_after_a_full_disk_every_line_parses_and_every_true_answer_is_written(
        tiny_tmpfs: Path, tmp_path: Path) -> None:
    """ENOSPC in the middle of a record: the part written is cut off (or the torn line ended) before the
    record is written again; main glued the next record onto the torn line, unreadable, counted as written."""
    path = tiny_tmpfs / "decisions.jsonl"
    registry = CollectorRegistry()
    running = create_server(logging_settings(path), registry)
    flags: dict[str, bool] = {}
    try:
        with RankingClient(f"127.0.0.1:{running.port}", retries=0) as c:
            flags["first"] = c.rank(big_request("first")).decision_logged
            wait_for_lines(path, 1)
            filler = _fill(tiny_tmpfs)
            for k in range(3):
                flags[f"full-{k}"] = c.rank(big_request(f"full-{k}")).decision_logged
            enospc = ("memrank_decision_log_write_failures_total", "ENOSPC")
            with contextlib.suppress(AssertionError):  # the writer tried, and failed, twice: or a second passed
                _wait("", lambda: _value(registry, enospc[0], error=enospc[1]) >= 2, timeout=1.0)
            filler.unlink()
            flags["after"] = c.rank(big_request("after")).decision_logged
            _wait("the records written again", lambda: _ends_with_line(path, "after"))
    finally:
        running.stop(5)
    assert all(flags.values()), flags
    assert _ids(path) == list(flags)  # every line parses, in order, none missing, none twice
    assert _value(registry, *enospc[:1], error=enospc[1]) >= 2


# ---------------------------------------------------------------- copytruncate (item 5)


def test_copytruncate_is_warned_once_and_records_go_on_at_the_new_end(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """What logrotate's copytruncate does: copy the file, then truncate it under the writer. The writer
    notices the file shrank (a warning, once), and O_APPEND puts the next record at offset 0: no hole of NUL
    bytes, nothing lost after the truncation."""
    path = tmp_path / "decisions.jsonl"
    running = create_server(logging_settings(path))
    try:
        with RankingClient(f"127.0.0.1:{running.port}", retries=0) as c:
            for rotation in range(2):
                for k in range(3):
                    assert c.rank(small_request(f"r{rotation}-{k}")).decision_logged
                wait_for_lines(path, 3)
                copy = path.with_name(f"{path.name}.{rotation + 1}")
                copy.write_bytes(path.read_bytes())
                os.truncate(path, 0)
            assert c.rank(small_request("last")).decision_logged
            wait_for_lines(path, 1)
    finally:
        running.stop(5)
    assert b"\0" not in path.read_bytes()
    assert _ids(path) == ["last"]
    assert _ids(tmp_path / "decisions.jsonl.1", tmp_path / "decisions.jsonl.2") == [
        f"r{r}-{k}" for r in range(2) for k in range(3)]
    err = capfd.readouterr().err
    assert err.count("decision log file shrank under its writer (logrotate copytruncate?)") == 1, err


# ---------------------------------------------------------------- a loss after a true answer (item 6)


def test_records_a_killed_writer_took_are_counted_lost_after_ack_apart_from_refusals(tmp_path: Path) -> None:
    """The writer stopped, handed records (answered true) and then killed: those records are gone with it and
    counted as lost_after_ack; the calls refused while it is replaced are writer_down; every true answer has
    its record or is counted lost (main counted both as writer_down)."""
    path = tmp_path / "decisions.jsonl"
    registry = CollectorRegistry()
    running = create_server(logging_settings(path), registry)
    log = running.service.decisions
    assert log is not None
    flags: dict[str, bool] = {}
    try:
        with RankingClient(f"127.0.0.1:{running.port}", retries=0) as c:
            flags["before"] = c.rank(small_request("before")).decision_logged
            wait_for_lines(path, 1)
            first = log.writer_pid
            os.kill(first, signal.SIGSTOP)  # records pile up in its pipe, taken but not written
            for k in range(5):
                flags[f"taken-{k}"] = c.rank(small_request(f"taken-{k}")).decision_logged
            _wait("the records handed to the writer", lambda: log.in_writer == 5)
            os.kill(first, signal.SIGKILL)
            _wait("the writer gone", lambda: not process_alive(first))
            k = 0
            while log.writer_pid == first or not flags.get(f"again-{k - 1}"):
                flags[f"again-{k}"] = c.rank(small_request(f"again-{k}")).decision_logged
                k += 1
                time.sleep(0.02)
                assert k < 500, "the writer was not restarted"
            _wait("the last record written", lambda: _ends_with_line(path, f"again-{k - 1}"))
    finally:
        running.stop(5)
    written = set(_ids(path))
    true = {rid for rid, ok in flags.items() if ok}
    assert written <= true
    lost = _value(registry, "memrank_decision_log_dropped_total", reason="lost_after_ack")
    # Every true answer without its record is counted lost: the five the killed writer held, and a call answered
    # true in the moment the writer was being replaced, if one was (seen once in CI: again-0).
    taken = {f"taken-{k}" for k in range(5)}
    missing = true - written
    assert lost == len(missing) and taken <= missing <= taken | {"again-0"}, (lost, sorted(missing))
    refused = _value(registry, "memrank_decision_log_dropped_total", reason="writer_down")
    assert refused == sum(not ok for ok in flags.values())


# ---------------------------------------------------------------- durability: decision_log.fsync


def _tracer(pid: int) -> int:
    """The process id ptrace-attached to ``pid`` (0: none)."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("TracerPid:")))


def _fsyncs_while(pid: int, out: Path, work: Any) -> list[str]:
    """The writer's write and fsync system calls (strace attached to ``pid``) while ``work()`` runs."""
    trace = subprocess.Popen(["strace", "-qq", "-f", "-e", "trace=write,fsync", "-o", str(out), "-p", str(pid)],
                             stderr=subprocess.DEVNULL)
    try:
        _wait("strace attached", lambda: _tracer(pid) == trace.pid, timeout=10)
        work()
    finally:
        trace.send_signal(signal.SIGINT)
        trace.wait(5)
    return [line.split("(", 1)[0].split()[-1] for line in out.read_text().splitlines() if "(" in line]


@pytest.mark.parametrize("policy", ["every", "interval"])
def test_the_writer_fsyncs_as_decision_log_fsync_says(tmp_path: Path, policy: str) -> None:
    """every: an fsync after each record's write; interval (0.3 s here): one for a burst of records, and one
    for a record written while idle, within the interval (main: no fsync at all, and no such key)."""
    if subprocess.run(["strace", "-V"], capture_output=True).returncode != 0:
        pytest.skip("strace is not installed")
    path = tmp_path / "decisions.jsonl"
    running = create_server(logging_settings(path, fsync=policy, fsync_interval_seconds=0.3))
    log = running.service.decisions
    assert log is not None

    def burst() -> None:
        for k in range(5):
            assert c.rank(small_request(f"burst-{k}")).decision_logged
        _wait("the burst written", lambda: _ends_with_line(path, "burst-4"))
        time.sleep(0.5)  # an interval passes: what was written is synced
    try:
        with RankingClient(f"127.0.0.1:{running.port}", retries=0) as c:
            assert c.rank(small_request("first")).decision_logged
            wait_for_lines(path, 1)
            calls = _fsyncs_while(log.writer_pid, tmp_path / "strace.txt", burst)
    finally:
        running.stop(5)
    records = [c for c in calls if c in ("write", "fsync")]
    writes = records.count("write")  # each record: one write of its line, one report on the pipe
    assert writes >= 10, calls
    if policy == "every":
        assert records.count("fsync") == 5, calls
        assert records[-1] == "write" and records[-2] == "fsync", calls  # synced, then reported
    else:
        assert 1 <= records.count("fsync") <= 3, calls  # not one per record
        assert records[-1] == "fsync", calls  # the last records synced, within the interval


def test_over_ten_writer_kills_under_load_every_true_answer_is_written_or_counted_lost(tmp_path: Path) -> None:
    """The issue's "done when": calls logging without pause while the writer is SIGKILLed ten times, as soon as
    each replacement runs. Every call answered true has its record, or is counted lost_after_ack; every call
    answered false is counted as a refusal (writer_down, queue_full). A record written in the instant between
    its write and its report is counted lost though it is there: at most one per kill."""
    path = tmp_path / "decisions.jsonl"
    registry = CollectorRegistry()
    running = create_server(logging_settings(path), registry)
    log = running.service.decisions
    assert log is not None
    flags: dict[str, bool] = {}
    stop = threading.Event()

    def call() -> None:
        with RankingClient(f"127.0.0.1:{running.port}", retries=0) as c:
            k = 0
            while not stop.is_set():
                flags[f"load-{k}"] = c.rank(small_request(f"load-{k}")).decision_logged
                k += 1
    caller = threading.Thread(target=call)
    caller.start()
    try:
        done = 0
        for _ in range(10):  # each writer killed once it has written a record: calls are flowing through it
            _wait("the writer writing", lambda: log.written()[0] > done, timeout=15)  # noqa: B023
            done = log.written()[0]
            first = log.writer_pid
            os.kill(first, signal.SIGKILL)
            _wait("a new writer", lambda: log.writer_pid != first, timeout=15)  # noqa: B023
    finally:
        stop.set()
        caller.join(30)
        running.stop(10)
    written = _killed_ids(path)
    assert len(written) == len(set(written))  # none twice
    true = {rid for rid, ok in flags.items() if ok}
    assert set(written) <= true
    missing = len(true - set(written))
    lost = _value(registry, "memrank_decision_log_dropped_total", reason="lost_after_ack")
    assert missing <= lost <= missing + 10, (missing, lost)
    refused = sum(_value(registry, "memrank_decision_log_dropped_total", reason=r)
                  for r in ("writer_down", "queue_full", "closed"))
    assert refused == sum(not ok for ok in flags.values())
    assert log.restarts == 10 and len(flags) > 100, (log.restarts, len(flags))


def _feedback_frame(request_id: str, labels: int) -> bytes:
    capture = {"kind": "feedback", "feedback_id": f"fb-{request_id}", "decision_id": "d", "request_id": request_id,
               "labeler": "", "server_time": 1.7e9, "labels": [(f"m{i}", 2) for i in range(labels)]}
    data = pickle.dumps(capture, protocol=pickle.HIGHEST_PROTOCOL)
    return len(data).to_bytes(8, "big") + data


def test_a_stdout_sink_on_a_full_disk_ends_the_torn_line_before_the_record_again(tiny_tmpfs: Path) -> None:
    """The writer process itself, its stdout a file on a full disk (a stream: the part written cannot be cut
    off). The torn part stays on a line of its own, the record follows whole on the next; main glued the next
    record onto the torn part."""
    out = tiny_tmpfs / "stdout.jsonl"
    report_read, report_write = os.pipe()
    settings = json.dumps(asdict(DecisionLogSettings(enabled=True, sink="stdout")))
    with out.open("wb") as stdout:
        writer = subprocess.Popen([sys.executable, "-m", "memrank.decisions.writer", settings, str(report_write)],
                                  stdin=subprocess.PIPE, stdout=stdout, pass_fds=(report_write,),
                                  env={k: v for k, v in os.environ.items() if k != "MEMRANK_DECISION_LOG_LOCK"})
    os.close(report_write)
    assert writer.stdin is not None
    reports = os.fdopen(report_read, "rb", buffering=0)
    try:
        writer.stdin.write(_feedback_frame("small", 1))
        writer.stdin.flush()
        assert reports.readline() == b"f\n"
        filler = _fill(tiny_tmpfs)
        writer.stdin.write(_feedback_frame("big", 400))  # about 15 KB: more than any page's free part
        writer.stdin.flush()
        first = reports.readline()
        filler.unlink()
        writer.stdin.write(_feedback_frame("next", 1))
        writer.stdin.close()
        rest = reports.read()
        assert writer.wait(10) == 0
    finally:
        if writer.poll() is None:
            writer.kill()
        reports.close()
    assert first == b"x ENOSPC\n", first
    assert rest.endswith(b"f\nf\n"), rest
    lines = out.read_bytes().split(b"\n")
    assert lines[-1] == b""
    parsed = [json.loads(line)["request_id"] for line in lines[:-1] if line.endswith(b"}")]
    torn = [line for line in lines[:-1] if not line.endswith(b"}")]
    assert parsed == ["small", "big", "next"], parsed
    assert len(torn) == 1 and b'"request_id":"big"' in torn[0], torn  # the small record leaves a page part free


def _writers(root: int) -> set[int]:
    """Live decision-log writer processes descended from ``root`` (a supervisor: workers, then their writers)."""
    parent: dict[int, int] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError, IndexError):
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(") ", 1)[1].split()
            if fields[0] != "Z":
                parent[int(entry)] = int(fields[1])
    found = set()
    for pid in parent:
        up = pid
        while up in parent and up != root:
            up = parent[up]
        if up == root and pid != root:
            with contextlib.suppress(OSError):
                if b"memrank.decisions.writer" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    found.add(pid)
    return found


def _dropped(metrics_port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read().decode()
    return {s.labels["reason"]: s.value for f in text_string_to_metric_families(text)
            if f.name == "memrank_decision_log_dropped" for s in f.samples if s.name.endswith("_total")}


def test_two_workers_ten_writer_kills_every_true_answer_is_written_or_counted_lost(tmp_path: Path) -> None:
    """As above, with `memrank serve --workers 2` (a writer per worker, one shared file), the writers killed in
    turn, the counts read from the supervisor's /metrics."""
    path = tmp_path / "decisions.jsonl"
    mport = free_port()
    proc = start_serve(tmp_path, "--address", f"127.0.0.1:{free_port()}", "--metrics-port", str(mport),
                       "--workers", "2", env={"MEMRANK_DECISION_LOG_ENABLED": "true",
                                              "MEMRANK_DECISION_LOG_SINK": "file",
                                              "MEMRANK_DECISION_LOG_PATH": str(path)})
    flags: dict[str, bool] = {}
    stop_calls = threading.Event()

    def call(n: int) -> None:
        with RankingClient(f"127.0.0.1:{proc.port}", retries=0) as c:
            k = 0
            while not stop_calls.is_set():
                flags[f"c{n}-{k}"] = c.rank(small_request(f"c{n}-{k}")).decision_logged
                k += 1
    callers = [threading.Thread(target=call, args=(n,)) for n in range(4)]
    try:
        _wait("two writers", lambda: len(_writers(proc.popen.pid)) == 2, timeout=20)
        for t in callers:
            t.start()
        for i in range(10):
            lines = len(path.read_bytes().splitlines()) if path.exists() else 0
            _wait("records written", lambda: path.exists() and len(path.read_bytes().splitlines()) > lines + 1,  # noqa: B023
                  timeout=20)
            alive = sorted(_writers(proc.popen.pid))
            assert len(alive) == 2, alive
            os.kill(alive[i % 2], signal.SIGKILL)
            _wait("a new writer", lambda: alive[i % 2] not in _writers(proc.popen.pid)  # noqa: B023
                  and len(_writers(proc.popen.pid)) == 2, timeout=20)
        stop_calls.set()
        for t in callers:
            t.join(30)
        true = {rid for rid, ok in flags.items() if ok}
        _wait("the last records written", lambda: path.read_bytes().endswith(b"\n")
              and len(set(_killed_ids(path))) + _dropped(mport).get("lost_after_ack", 0) >= len(true), timeout=20)
        dropped = _dropped(mport)
    finally:
        stop_calls.set()
        assert stop(proc) == 0
    written = _killed_ids(path)
    assert len(written) == len(set(written))  # none twice
    assert set(written) <= true
    missing = len(true - set(written))
    lost = dropped.get("lost_after_ack", 0)
    assert missing <= lost <= missing + 10, (missing, lost)
    refused = sum(dropped.get(r, 0) for r in ("writer_down", "queue_full", "closed"))
    assert refused == sum(not ok for ok in flags.values()), (dropped, len(flags))
    assert len(flags) > 100


def test_a_file_rotated_away_is_fsynced_as_it_is_closed(tmp_path: Path) -> None:
    """fsync interval (an hour here: no periodic sync in the test's time): the built-in rotation fsyncs the
    file before renaming it away, since the next periodic fsync would reach the new file only."""
    if subprocess.run(["strace", "-V"], capture_output=True).returncode != 0:
        pytest.skip("strace is not installed")
    path = tmp_path / "decisions.jsonl"
    running = create_server(logging_settings(path, fsync="interval", fsync_interval_seconds=3600,
                                             max_bytes=1 << 16, backups=1))
    log = running.service.decisions
    assert log is not None
    rotated = path.with_name(path.name + ".1")

    def until_rotated() -> None:
        k = 0
        while not rotated.exists():
            assert c.rank(big_request(f"big-{k}")).decision_logged
            k += 1
            assert k < 100, "never rotated"
        time.sleep(0.2)
    try:
        with RankingClient(f"127.0.0.1:{running.port}", retries=0) as c:
            assert c.rank(small_request("first")).decision_logged
            wait_for_lines(path, 1)
            out = tmp_path / "strace.txt"
            trace = subprocess.Popen(["strace", "-qq", "-f", "-e", "trace=fsync,rename", "-o", str(out),
                                      "-p", str(log.writer_pid)], stderr=subprocess.DEVNULL)
            try:
                _wait("strace attached", lambda: _tracer(log.writer_pid) == trace.pid, timeout=10)
                until_rotated()
            finally:
                trace.send_signal(signal.SIGINT)
                trace.wait(5)
    finally:
        running.stop(5)
    calls = [line.split("(", 1)[0].split()[-1] for line in out.read_text().splitlines() if "(" in line]
    assert calls[:2] == ["fsync", "rename"], calls
