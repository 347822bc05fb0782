"""The log writer: a bounded queue, then a process of its own, so formatting never competes with Rank calls.

``DecisionLog.submit`` puts a capture on a queue of ``decision_log.queue_size``
records and returns at once; when the queue is full the record is dropped and
counted, never waited for. A feeder thread pickles each capture down a pipe to
the writer process (``python -m memrank.decisions.writer``, one per server
process), which masks, formats and writes it: JSON formatting of thousands of
floats runs outside the handler's interpreter and its GIL. ``close`` (graceful
shutdown, after the last call is answered) waits until every queued record is
written. The writer ignores SIGTERM and SIGINT (its server stops it after the
drain by closing the pipe) and, when its server dies, writes what reached it
and exits on the pipe's end of file.

Pipe frames: an 8-byte big-endian length, then a pickled capture. The writer
reports on a second pipe one line per record: ``d`` (decision written), ``f``
(feedback written) or ``e`` (a record that failed to write).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
from dataclasses import asdict
from typing import IO, Any

from memrank.config import DecisionLogSettings
from memrank.decisions.mask import HASH, PLAIN, Masker
from memrank.decisions.record import to_line
from memrank.decisions.sink import check_sink, open_sink
from memrank.logs import setup_logging
from memrank.metrics.declare import Metrics

log = logging.getLogger("memrank.decisions")
_STOP = object()
_SLOTS = {b"d": 0, b"f": 1, b"e": 2}


class DecisionLog:
    """The request-path end of the decision log of one server process."""

    def __init__(self, settings: DecisionLogSettings, metrics: Metrics | None = None) -> None:
        self.settings = settings
        if settings.content == HASH:
            settings.hash_key()  # ConfigError naming the key when the file cannot be read, at start
        check_sink(settings.sink, settings.path)  # ConfigError naming decision_log.path, before the writer starts
        if settings.content == PLAIN:
            log.warning("decision_log.content is plain: the query and every candidate's content are written "
                        "to the decision log in clear", extra={"sink": settings.sink, "path": settings.path})
        self._metrics = metrics
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=settings.queue_size)
        self._counts = [0, 0, 0]  # decisions written, feedback written, failed to write
        self.dropped = 0  # records dropped because the queue was full, since start
        self._closed = False
        report_read, report_write = os.pipe()
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "memrank.decisions.writer", json.dumps(asdict(settings)), str(report_write)],
            stdin=subprocess.PIPE, pass_fds=(report_write,), close_fds=True,
        )
        os.close(report_write)
        assert self._proc.stdin is not None
        self._pipe: IO[bytes] = self._proc.stdin
        self._feeder = threading.Thread(target=self._feed, name="memrank-decision-log-feed", daemon=True)
        self._feeder.start()
        self._reports = os.fdopen(report_read, "rb", buffering=0)
        self._reader = threading.Thread(target=self._read_reports, name="memrank-decision-log-reports", daemon=True)
        self._reader.start()
        log.info("decision log on", extra={"sink": settings.sink, "path": settings.path,
                                          "sample_rate": settings.sample_rate, "content": settings.content,
                                          "queue_size": settings.queue_size, "writer_pid": self._proc.pid})

    def submit(self, capture: dict[str, Any]) -> bool:
        """Queue one record for writing; False (and counted as dropped) when the queue is full or closed."""
        if not self._closed:
            try:
                self._queue.put_nowait(capture)
                return True
            except queue.Full:
                pass
        self.dropped += 1
        if self._metrics is not None:
            self._metrics.decision_log_dropped.labels(reason="queue_full").inc()
        return False

    def written(self) -> tuple[int, int, int]:
        """(decisions written, feedback written, records that failed to write), as the writer reported them."""
        return self._counts[0], self._counts[1], self._counts[2]

    def _feed(self) -> None:
        """Pickle queued captures down the pipe, in order, until close() queues the stop."""
        while True:
            item = self._queue.get()
            if item is _STOP:
                break
            data = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
            try:
                self._pipe.write(len(data).to_bytes(8, "big") + data)
                self._pipe.flush()  # now, not when 8 KiB have gathered: a record must not wait in this process
            except (BrokenPipeError, ValueError, OSError):
                self._lost("writer_gone")
        with contextlib.suppress(OSError):
            self._pipe.close()  # end of file: the writer finishes what it has and exits

    def _lost(self, reason: str) -> None:
        self.dropped += 1
        if self._metrics is not None:
            self._metrics.decision_log_dropped.labels(reason=reason).inc()

    def _read_reports(self) -> None:
        """Count the writer's reports into the metrics as they come (one byte and a newline per record)."""
        for line in self._reports:
            slot = _SLOTS.get(line.strip())
            if slot is None:
                continue
            self._counts[slot] += 1
            m = self._metrics
            if m is not None:
                if slot == 2:
                    m.decision_log_dropped.labels(reason="write_error").inc()
                else:
                    m.decision_log_records.labels(kind="decision" if slot == 0 else "feedback").inc()
        self._reports.close()

    def close(self, timeout: float = 30.0) -> None:
        """Write every queued record, stop the writer, bring the counts up to date. A second call does nothing."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)  # after every record queued so far (one FIFO queue)
        self._feeder.join(timeout)
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            log.error("decision log writer did not finish in time; stopping it", extra={"seconds": timeout})
            self._proc.kill()
            self._proc.wait()
        self._reader.join(5)
        d, f, failed = self.written()
        log.info("decision log closed", extra={"decisions": d, "feedback": f, "failed": failed,
                                               "dropped": self.dropped, "writer_exit": self._proc.returncode})


def _read_exactly(stream: IO[bytes], n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        chunk = stream.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def main(argv: list[str]) -> int:
    """The writer process: read framed captures from stdin until end of file, write each as one line."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the server closes the pipe after its drain
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group
    setup_logging("info")
    settings = DecisionLogSettings(**json.loads(argv[0]))
    reports = os.fdopen(int(argv[1]), "wb", buffering=0)
    sink = open_sink(settings.sink, settings.path, settings.max_bytes, settings.backups)
    masker = Masker(settings.content, settings.hash_key() if settings.content == HASH else None)
    stream = sys.stdin.buffer
    while (head := _read_exactly(stream, 8)) is not None:
        body = _read_exactly(stream, int.from_bytes(head, "big"))
        if body is None:
            break
        try:
            item = pickle.loads(body)
            sink.write(to_line(item, masker))
        except Exception:
            log.exception("writing a decision log record failed")
            report = b"e\n"
        else:
            report = b"d\n" if item["kind"] == "decision" else b"f\n"
        with contextlib.suppress(OSError):  # the server is gone; keep writing what reached us
            reports.write(report)
    sink.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
