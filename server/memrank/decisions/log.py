"""The request-path end of the decision log: bounded queues, a feeder thread, a writer process that is restarted.

``DecisionLog.submit`` puts a capture on its kind's queue (decisions and feedback have one each, of
``decision_log.queue_size`` records, so a flood of decisions never pushes feedback out, nor the reverse) and
returns at once; a record that cannot be queued is dropped and counted by reason, never waited for. A feeder
thread pickles each capture down a pipe to the writer process (``memrank.decisions.writer``, one per server
process; in submission order), which masks, formats and writes it: JSON formatting of thousands of floats runs
outside the handler's interpreter and its GIL. ``close`` (graceful shutdown, after the last call is answered)
waits until every queued record is written, for up to its timeout (30 s): a sink that has not taken them by
then (a stuck disk) has its writer ended, and what it did not write is counted (``lost_after_ack``: each was
answered ``decision_logged`` true).

A writer that dies (killed, crashed) is noticed at once (its report pipe ends, or a write to it fails): from
then until its replacement runs, records are refused (``decision_logged`` false) and counted as
``writer_down``. The records it had been handed but never reported were answered true: they are counted as
``lost_after_ack``, apart from the refusals. Queued records, and the one it failed to take, wait for the new
writer. While the writer retries a sink that refuses its writes, records wait in the pipe and the queue;
once the queue is full, new ones are refused (``queue_full``).

Pipe frames: an 8-byte big-endian length, then a pickled capture (reports: see ``process``).
"""

from __future__ import annotations

import collections
import json
import logging
import pickle
import threading
import time
from dataclasses import asdict
from typing import Any

from memrank.config import DecisionLogSettings
from memrank.decisions.capture import DECISION, FEEDBACK
from memrank.decisions.mask import HASH, PLAIN
from memrank.decisions.process import WriterProcess
from memrank.decisions.s3sink import require_boto3
from memrank.decisions.sink import check_sink
from memrank.metrics.declare import Metrics

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
