"""One log writer process seen from its server: frames down its stdin, its reports read back, and how many
records it took but never reported (lost with it when it dies).

The writer (``python -m memrank.decisions.writer``) reports one line per record on a pipe of its own: ``d``
(decision written), ``f`` (feedback written), ``e`` (a record that could not be formatted) or ``l <reason>``
(a record taken and then dropped: sink s3's upload_failed, buffer_full, lost_after_ack); and, between
them, ``x <errno name>`` for each failed attempt at the sink (the record is retried, not yet reported). The
end of that pipe
is the end of the writer: ``on_exit`` is called then, however it ended (its server closed its stdin, or it
was killed).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import IO


class WriterProcess:
    """A running writer: ``send`` frames to it; ``on_report`` gets each report line, ``on_exit`` its end."""

    def __init__(self, settings_json: str, on_report: Callable[[bytes], None], on_exit: Callable[[], None]) -> None:
        report_read, report_write = os.pipe()
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "memrank.decisions.writer", settings_json, str(report_write)],
            stdin=subprocess.PIPE, pass_fds=(report_write,), close_fds=True,
        )
        os.close(report_write)
        assert self._proc.stdin is not None
        self._pipe: IO[bytes] = self._proc.stdin
        self.sent = 0  # frames handed over whole
        self.reported = 0  # report lines read back
        self._on_report, self._on_exit = on_report, on_exit
        self._reports = os.fdopen(report_read, "rb", buffering=0)
        self._reader = threading.Thread(target=self._read, name="memrank-decision-log-reports", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        """The writer's process id."""
        return self._proc.pid

    def send(self, frame: bytes) -> None:
        """Hand one frame to the writer, flushed (raises OSError or ValueError when the writer is gone)."""
        self._pipe.write(frame)
        self._pipe.flush()  # now, not when 8 KiB have gathered: a record must not wait in this process
        self.sent += 1

    def _read(self) -> None:
        for line in self._reports:
            if not line.startswith(b"x "):  # a failed attempt is not a record's report
                self.reported += 1
            self._on_report(line.strip())
        self._reports.close()
        self._on_exit()

    def unreported(self, timeout: float = 5.0) -> int:
        """Frames handed over that the writer never reported (call once it is gone: its reports are read first)."""
        self._reader.join(timeout)
        return max(0, self.sent - self.reported)

    def exit_code(self, timeout: float = 5.0) -> int | None:
        """The writer's exit status (negative: the signal that ended it), waiting up to ``timeout`` for it."""
        try:
            return self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        """End the writer now (a write blocked on its stdin then fails)."""
        with contextlib.suppress(OSError):
            self._proc.kill()

    def finish(self, timeout: float) -> int | None:
        """Close the writer's stdin (it writes what it has and exits), wait for it (killed after ``timeout``) and
        for its last reports; its exit status."""
        with contextlib.suppress(OSError):  # already gone
            self._pipe.close()
        code = self.exit_code(timeout)
        if code is None:
            self._proc.kill()
            code = self._proc.wait()
        self._reader.join(5)
        return code
