"""The writer process's patience with its sink: an open or a write that fails is retried until it succeeds.

A full disk, a read-only or immutable folder, a path replaced by a directory: each fails with ``OSError`` and
may clear by itself (space freed, the folder writable again). The record is kept and tried again, with
back-off, so nothing handed to the writer is skipped; each failed attempt is reported to the server (which
counts it in ``memrank_decision_log_write_failures_total{error}``), and the log gets one line when the failing
starts, at most one every ``LOG_EVERY`` seconds while it lasts, and one when it ends.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import threading
import time
from collections.abc import Callable
from typing import IO, TypeVar

log = logging.getLogger("memrank.decisions")
_T = TypeVar("_T")
RETRY_FIRST, RETRY_MAX = 0.05, 1.0  # seconds between attempts at a failed write: doubling up to a second
LOG_EVERY = 30.0  # seconds: at most one log line this often while writes keep failing
FAILING = "decision log write failed; retrying until it succeeds (records wait, then the queue refuses new ones)"


class Retry:
    """An operation on the sink retried until it succeeds: back-off from RETRY_FIRST to RETRY_MAX seconds, each
    failed attempt reported (``x <errno name>``, counted by the server), one log line when the failing starts,
    then at most one every LOG_EVERY seconds, and one when the sink works again."""

    def __init__(self, reports: IO[bytes], message: str = FAILING) -> None:
        self._reports, self._message = reports, message
        self._failed = 0  # failed attempts since the sink last worked
        self._since = 0.0  # when the failing started
        self._logged = 0.0  # when it was last logged
        self._mutex = threading.Lock()  # the writer's loop and its fsync thread both fail here

    def run(self, attempt: Callable[[], _T]) -> _T:
        """``attempt()``'s result; on OSError wait and call it again, until it returns."""
        delay = RETRY_FIRST
        while True:
            try:
                result = attempt()
            except OSError as exc:
                self.failed(exc)
                time.sleep(delay)
                delay = min(2 * delay, RETRY_MAX)
                continue
            self.succeeded()
            return result

    def succeeded(self) -> None:
        """The sink took a write: log the end of a failing spell, if one was going on."""
        if self._failed:
            log.warning("decision log writable again", extra={
                "failed_attempts": self._failed, "failing_seconds": round(time.monotonic() - self._since, 3)})
            self._failed = 0

    def failed(self, exc: Exception, name: str | None = None) -> None:
        """Count, report and (rate-limited) log one failed attempt; ``name`` the error's label (default: an
        OSError's errno name)."""
        with self._mutex:
            self._fail(exc, name or errno.errorcode.get(getattr(exc, "errno", None) or 0, "other"))

    def _fail(self, exc: Exception, name: str) -> None:
        report_line(self._reports, b"x " + name.encode() + b"\n")
        now = time.monotonic()
        if not self._failed:
            self._since = self._logged = now
        self._failed += 1
        if self._failed == 1 or now - self._logged >= LOG_EVERY:
            self._logged = now
            log.error(self._message, extra={"error": f"{name}: {getattr(exc, 'strerror', None) or exc}",
                                            "file": getattr(exc, "filename", None), "failed_attempts": self._failed,
                                            "failing_seconds": round(now - self._since, 3)})


def report_line(reports: IO[bytes], line: bytes) -> None:
    """Send one report line to the server, if it is still there."""
    with contextlib.suppress(OSError):  # the server is gone; keep writing what reached us
        reports.write(line)


