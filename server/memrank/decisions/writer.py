"""The log writer process: ``python -m memrank.decisions.writer``, one per server process, started by ``process``.

It reads framed captures from its stdin (an 8-byte big-endian length, then a pickled capture, as
``memrank.decisions.log`` sends them), and masks (``mask``), formats (``record``) and writes each as one JSON
line to its sink (``sink``: a file or stdout; or ``s3sink``), reporting each record on a pipe of its own
(``process`` reads the reports). The writer ignores SIGTERM and SIGINT (its server stops it after the drain by
closing the pipe) and, when its server dies, writes what reached it and exits on the pipe's end of file.

The writer retries a write the sink refuses (a full disk, a read-only or immutable folder, the path
replaced): it reopens the path, backs off up to a second between attempts, reports each failed attempt
(``memrank_decision_log_write_failures_total{error}``), logs the failing once (then at most every 30 s) and
its end, and writes the record once the sink takes it (``retry``).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import pickle
import signal
import sys
from collections.abc import Iterator
from typing import IO, Any

from memrank.config import DecisionLogSettings, decision_log_lock
from memrank.decisions.durability import Durability
from memrank.decisions.mask import HASH, Masker
from memrank.decisions.record import to_line
from memrank.decisions.retry import Retry, report_line
from memrank.decisions.s3sink import S3Sink
from memrank.decisions.sink import open_sink
from memrank.system.logs import setup_logging

log = logging.getLogger("memrank.decisions")


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
