"""A slow disk without root: a named pipe (FIFO) read slowly by a helper process, which keeps what it reads.

A writer of the pipe blocks once the pipe's buffer (64 KiB on Linux) is full, and then writes only as fast as
the reader reads: ``rate`` bytes a second. ``fast()`` lets the reader catch up at full speed; ``close()``
drains what is left and stops it. ``data()`` is every byte read so far.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

CHUNK = 1024


class SlowDisk:
    """A FIFO at ``path`` read ``rate`` bytes a second by a helper process, into ``path`` + ".read"."""

    def __init__(self, path: Path, rate: int) -> None:
        self.path = path
        self.out = path.with_name(path.name + ".read")
        self._fast, self._stop = path.with_name(path.name + ".fast"), path.with_name(path.name + ".stop")
        os.mkfifo(path)
        self.out.write_bytes(b"")
        self._proc = subprocess.Popen([sys.executable, __file__, str(path), str(self.out), str(self._fast),
                                       str(self._stop), str(rate)])

    def fast(self) -> None:
        """From now on the reader reads as fast as it can."""
        self._fast.touch()

    def data(self) -> bytes:
        """Every byte read so far."""
        return self.out.read_bytes()

    def close(self, timeout: float = 30) -> None:
        """Read what is left in the pipe, then stop the reader."""
        self.fast()
        self._stop.touch()
        try:
            self._proc.wait(timeout)
        finally:
            if self._proc.poll() is None:
                self._proc.kill()
                self._proc.wait()


def _read(fifo: str, out: str, fast: str, stop: str, rate: int) -> None:
    # Opened for reading and writing: the open never waits for a writer, and the reader never sees an end of
    # file between two writers (the server's start-up check, then its writer process).
    fd = os.open(fifo, os.O_RDWR)
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
    with open(out, "ab") as f:
        while True:
            slow = not os.path.exists(fast)
            try:
                data = os.read(fd, CHUNK if slow else 1 << 20)
            except BlockingIOError:
                if os.path.exists(stop):
                    return
                time.sleep(0.01)
                continue
            f.write(data)
            f.flush()
            if slow:
                time.sleep(len(data) / rate)


if __name__ == "__main__":
    _read(*sys.argv[1:5], int(sys.argv[5]))
