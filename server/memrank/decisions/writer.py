"""The log writer: bounded queues, then a process of its own, so formatting never competes with Rank calls.

``DecisionLog.submit`` puts a capture on its kind's queue (decisions and feedback have one each, of
``decision_log.queue_size`` records, so a flood of decisions never pushes feedback out, nor the reverse) and
returns at once; a record that cannot be queued is dropped and counted by reason, never waited for. A feeder
thread pickles each capture down a pipe to the writer process (``python -m memrank.decisions.writer``, one
per server process; in submission order), which masks, formats and writes it: JSON formatting of thousands of
floats runs outside the handler's interpreter and its GIL. ``close`` (graceful shutdown, after the last call
is answered) waits until every queued record is written, for up to its timeout (30 s): a sink that has not
taken them by then (a stuck disk) has its writer ended, and what it did not write is counted
(``lost_after_ack``: each was answered ``decision_logged`` true). The writer ignores SIGTERM and SIGINT
(its server stops it after the drain by closing the pipe) and, when its server dies, writes what reached it
and exits on the pipe's end of file.

A writer that dies (killed, crashed) is noticed at once (its report pipe ends, or a write to it fails): from
then until its replacement runs, records are refused (``decision_logged`` false) and counted as
``writer_down``. The records it had been handed but never reported were answered true: they are counted as
``lost_after_ack``, apart from the refusals. Queued records, and the one it failed to take, wait for the new
writer.

The writer retries a write the sink refuses (a full disk, a read-only or immutable folder, the path
replaced): it reopens the path, backs off up to a second between attempts, reports each failed attempt
(``memrank_decision_log_write_failures_total{error}``), logs the failing once (then at most every 30 s) and
its end, and writes the record once the sink takes it. Meanwhile records wait in the pipe and the queue;
once the queue is full, new ones are refused (``queue_full``).

Pipe frames: an 8-byte big-endian length, then a pickled capture (reports: see ``process``).
"""

from __future__ import annotations

import collections
import functools
import json
import logging
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict
from typing import IO, Any

from memrank.config import DecisionLogSettings, decision_log_lock
from memrank.decisions.capture import DECISION, FEEDBACK
from memrank.decisions.durability import Durability
from memrank.decisions.mask import HASH, PLAIN, Masker
from memrank.decisions.process import WriterProcess
from memrank.decisions.record import to_line
from memrank.decisions.retry import Retry, report_line
from memrank.decisions.s3sink import S3Sink, require_boto3
from memrank.decisions.sink import check_sink, open_sink
from memrank.metrics.declare import Metrics
from memrank.system.logs import setup_logging

log = logging.getLogger("memrank.decisions")
_SLOTS = {b"d": 0, b"f": 1, b"e": 2}
RESTART_SECONDS = 1.0  # at most one writer start per second: a writer that dies at once is not restarted in a loop
# Why a record was not written (memrank_decision_log_dropped_total{reason}); each shown from the start, at 0.
# Refused, the call answered decision_logged=false: queue_full, writer_down, closed. Lost after the call answered
# true: lost_after_ack (taken by a writer that died, or still queued when close() ran out of time),
# write_error (a record the writer could not format), and sink s3's upload_failed (its object failed every
# retry) and buffer_full (uploads failing, the writer's s3_buffer_bytes held: memrank.decisions.s3sink).
# sampled_out is by design (decision_log.sample_rate), not a loss: the dashboard keeps it apart from the others.
REFUSED = ("queue_full", "writer_down", "closed")
LOST_AFTER_TRUE = ("lost_after_ack", "write_error", "upload_failed", "buffer_full")
DROP_REASONS = (*REFUSED, *LOST_AFTER_TRUE, "sampled_out")


class DecisionLog:
    """The request-path end of the decision log of one server process."""

    def __init__(self, settings: DecisionLogSettings, metrics: Metrics | None = None) -> None:
        self.settings = settings
        if settings.content == HASH:
            settings.hash_key()  # ConfigError naming the key when the file cannot be read, at start
        check_sink(settings.sink, settings.path)  # ConfigError naming decision_log.path, before the writer starts
        if settings.sink == "s3":
            require_boto3()  # ConfigError naming the extra
        if settings.content == PLAIN:
            log.warning("decision_log.content is plain: the query and every candidate's content are written "
                        "to the decision log in clear", extra={"sink": settings.sink, "path": settings.path})
        self._metrics = metrics
        if metrics is not None:  # every reason a series from the start: a rate or an alert reads 0, not nothing
            for reason in DROP_REASONS:
                metrics.decision_log_dropped.labels(reason=reason)
        self._json = json.dumps(asdict(settings))
        self._cond = threading.Condition()
        # (submission number, capture): sent in submission order, each kind bounded on its own
        self._queues: dict[str, collections.deque[tuple[int, dict[str, Any]]]] = {
            DECISION: collections.deque(), FEEDBACK: collections.deque()}
        self._submitted = 0
        self._counts = [0, 0, 0]  # decisions written, feedback written, failed to write
        self.dropped: collections.Counter[str] = collections.Counter()  # records not written, by reason
        self.restarts = 0
        self._closed = False  # no more submissions
        self._finishing = False  # the feeder is ending the writer on purpose
        self._down = False  # the writer is gone and not yet replaced
        self._started = time.monotonic()
        self._writer = WriterProcess(self._json, self._report, self._writer_exited)
        self._feeder = threading.Thread(target=self._feed, name="memrank-decision-log-feed", daemon=True)
        self._feeder.start()
        log.info("decision log on", extra={"sink": settings.sink, "path": settings.path,
                                          "sample_rate": settings.sample_rate, "content": settings.content,
                                          "queue_size": settings.queue_size, "writer_pid": self._writer.pid})

    @property
    def writer_pid(self) -> int:
        """The process id of the current writer."""
        return self._writer.pid

    @property
    def in_writer(self) -> int:
        """Records handed to the current writer and not yet reported (written or failed): lost if it dies now."""
        return self._writer.sent - self._writer.reported

    def submit(self, capture: dict[str, Any]) -> bool:
        """Queue one record for a live writer; False (and counted as dropped, by reason) when it cannot be."""
        queue = self._queues[capture["kind"]]
        with self._cond:
            if self._closed:
                reason = "closed"
            elif self._down:
                reason = "writer_down"
            elif len(queue) >= self.settings.queue_size:
                reason = "queue_full"
            else:
                queue.append((self._submitted, capture))
                self._submitted += 1
                self._cond.notify()
                return True
        self._lost(reason)
        return False

    def sampled_out(self) -> None:
        """Count one decision left out by ``sample_rate`` (``dropped{reason="sampled_out"}``)."""
        self._lost("sampled_out")

    def written(self) -> tuple[int, int, int]:
        """(decisions written, feedback written, records that failed to write), as the writers reported them."""
        return self._counts[0], self._counts[1], self._counts[2]

    def _lost(self, reason: str, n: int = 1) -> None:
        if n <= 0:
            return
        with self._cond:  # reentrant: callers may hold it
            self.dropped[reason] += n
        if self._metrics is not None:
            self._metrics.decision_log_dropped.labels(reason=reason).inc(n)

    def _writer_exited(self) -> None:
        with self._cond:
            if not self._finishing:
                self._down = True
                self._cond.notify()

    def _next(self) -> tuple[int, dict[str, Any]] | None:
        """The next capture to send (the earliest submitted), None once closed and empty; restarts a dead
        writer."""
        with self._cond:
            while not (self._down or self._closed or any(self._queues.values())):
                self._cond.wait()
            if self._down and self._finishing:  # close() gave up on a writer stuck on its sink: no new one
                return None
            if not self._down or (self._closed and not any(self._queues.values())):
                heads = [queue for queue in self._queues.values() if queue]
                return min(heads, key=lambda q: q[0][0]).popleft() if heads else None  # None: closed, empty
        self._restart()
        return self._next()

    def _feed(self) -> None:
        """Pickle queued captures down the pipe until close() and the queues are empty; then end the writer."""
        while (entry := self._next()) is not None:
            item = entry[1]
            data = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
            try:
                self._writer.send(len(data).to_bytes(8, "big") + data)
            except (OSError, ValueError):  # the writer is gone: this record waits for the next one
                with self._cond:
                    self._queues[item["kind"]].appendleft(entry)
                    self._down = True

    def _restart(self) -> None:
        """Count what the dead writer took with it, and start another (at most one start a second)."""
        old = self._writer
        code = old.finish(5)
        lost = old.unreported()
        self._lost("lost_after_ack", lost)  # answered true, handed to the writer, gone with it
        wait = self._started + RESTART_SECONDS - time.monotonic()
        log.error("decision log writer died; restarting it", extra={
            "writer_pid": old.pid, "exit": code, "records_lost": lost, "restarts": self.restarts + 1,
            "restart_in_seconds": round(max(0.0, wait), 3)})
        if wait > 0:
            time.sleep(wait)
        self._started = time.monotonic()
        writer = WriterProcess(self._json, self._report, self._writer_exited)
        with self._cond:
            self._writer, self._down = writer, False
            self.restarts += 1
        log.info("decision log writer restarted", extra={"writer_pid": self._writer.pid})

    def _report(self, line: bytes) -> None:
        """Count one of the writer's reports into the metrics as it comes."""
        slot = _SLOTS.get(line)
        if slot is None:
            if line.startswith(b"l "):  # a record the writer took and had to drop (sink s3), by reason
                self._lost(line[2:].decode(errors="replace"))
            elif line.startswith(b"x ") and self._metrics is not None:  # a failed attempt, retried by the writer
                self._metrics.decision_log_write_failures.labels(error=line[2:].decode(errors="replace")).inc()
            return
        self._counts[slot] += 1
        m = self._metrics
        if m is not None:
            if slot == 2:
                m.decision_log_dropped.labels(reason="write_error").inc()
            else:
                m.decision_log_records.labels(kind="decision" if slot == 0 else "feedback").inc()

    def close(self, timeout: float | None = None) -> None:
        """Write every queued record, stop the writer, bring the counts up to date; within about ``timeout``
        seconds (default 30, or sink s3's s3_close_seconds + 10 when longer), even when the sink is stuck. A
        second call does nothing."""
        if timeout is None:
            timeout = max(30.0, self.settings.s3_close_seconds + 10 if self.settings.sink == "s3" else 0.0)
        deadline = time.monotonic() + timeout
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify()
        self._feeder.join(timeout)
        with self._cond:
            self._finishing = True
        if self._feeder.is_alive():
            # Records still waiting when the time is up: the writer is stuck on its sink (a slow or hung disk)
            # and the feeder on the writer's full pipe. End the writer: the feeder's write fails, it stops.
            log.error("decision log: the sink did not take the queued records in time; ending its writer",
                      extra={"timeout_seconds": timeout, "writer_pid": self._writer.pid})
            self._writer.kill()
            self._feeder.join(5)
        code = self._writer.finish(max(1.0, deadline - time.monotonic()))
        if code is None or code != 0:
            self._lost("lost_after_ack", self._writer.unreported())
        with self._cond:  # answered true, never handed to a writer: lost to the shutdown, counted
            left = sum(len(queue) for queue in self._queues.values())
            for queue in self._queues.values():
                queue.clear()
        self._lost("lost_after_ack", left)
        d, f, failed = self.written()
        log.info("decision log closed", extra={"decisions": d, "feedback": f, "failed": failed,
                                               "dropped": dict(self.dropped), "writer_exit": code,
                                               "restarts": self.restarts})


def _read_exactly(stream: IO[bytes], n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        chunk = stream.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _frames(stream: IO[bytes]) -> Iterator[bytes]:
    while (head := _read_exactly(stream, 8)) is not None:
        body = _read_exactly(stream, int.from_bytes(head, "big"))
        if body is None:
            return
        yield body


def _formatted(body: bytes, masker: Masker) -> tuple[dict[str, Any], bytes] | None:
    """The capture and its line; None (logged) when it cannot be formatted (a bug, not the sink: no retry
    would help)."""
    try:
        item = pickle.loads(body)
        return item, to_line(item, masker)
    except Exception:
        log.exception("formatting a decision log record failed")
        return None


def _to_bucket(settings: DecisionLogSettings, masker: Masker, stream: IO[bytes], reports: IO[bytes]) -> int:
    """Sink s3: each line to its object (memrank.decisions.s3sink reports it once uploaded or dropped)."""
    sink = S3Sink(settings, reports)
    for body in _frames(stream):
        if (formatted := _formatted(body, masker)) is None:
            report_line(reports, b"e\n")
        else:
            sink.write(formatted[0]["kind"], formatted[0]["server_time"], formatted[1])
    sink.close()
    return 0


def main(argv: list[str]) -> int:
    """The writer process: read framed captures from stdin until end of file, write each as one line."""
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # a reload storm to the process group (held until here)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the server closes the pipe after its drain
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group
    setup_logging("info")
    settings = DecisionLogSettings(**json.loads(argv[0]))
    reports = os.fdopen(int(argv[1]), "wb", buffering=0)
    masker = Masker(settings.content, settings.hash_key() if settings.content == HASH else None)
    if settings.sink == "s3":
        return _to_bucket(settings, masker, sys.stdin.buffer, reports)
    retry = Retry(reports)  # a restarted writer may find the folder unwritable for a while: it waits
    policy = settings.fsync if settings.sink == "file" else "never"  # a stream has nothing to fsync
    lock = decision_log_lock()
    sink = retry.run(lambda: open_sink(settings.sink, settings.path, settings.max_bytes, settings.backups,
                                       sync_on_close=policy != "never", lock=lock))
    durable = Durability(sink, policy, settings.fsync_interval_seconds, retry.failed)
    for body in _frames(sys.stdin.buffer):
        if (formatted := _formatted(body, masker)) is None:
            report = b"e\n"
        else:
            retry.run(functools.partial(sink.write, formatted[1]))
            durable.written()
            report = b"d\n" if formatted[0]["kind"] == "decision" else b"f\n"
        report_line(reports, report)
    durable.close()
    sink.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
