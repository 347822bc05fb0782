"""Where record lines go: stdout or a size-rotated file, one whole line per write across processes.

Several workers (each with its own writer process) share one sink. A line of
any size is written while holding an exclusive ``flock`` on a lock file shared
by all of them, so lines never interleave, even past the pipe buffer (a pipe
write of more than PIPE_BUF bytes is not atomic) and across file rotation. The
lock file is ``<path>.lock`` for a file sink; for stdout the supervisor names
one in ``MEMRANK_DECISION_LOG_LOCK`` (one process alone needs none).
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from memrank.core.errors import ConfigError

# Never through a symbolic link: a link planted at the path (or at its .lock) would send records elsewhere.
_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class _Lock:
    def __init__(self, path: str | None) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | _NOFOLLOW, 0o600) if path else None

    def __enter__(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_EX)

    def __exit__(self, *_: object) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)


class StdoutSink:
    """JSON lines on file descriptor 1 (a container's log stream); each line under ``lock`` (a file shared
    with the other workers writing to the same stdout, ``config.decision_log_lock``) when given."""

    def __init__(self, lock: str | None = None) -> None:
        self._lock = _Lock(lock)

    def write(self, line: bytes) -> None:
        """Write one whole line."""
        with self._lock:
            _write_all(1, line)

    def close(self) -> None:
        """Release the lock file."""
        self._lock.close()


class FileSink:
    """JSON lines appended to ``path``; before a line would take it past ``max_bytes``, the file is rotated:
    path.{backups-1} -> path.{backups}, ..., path -> path.1 (the oldest beyond ``backups`` is removed)."""

    def __init__(self, path: str, max_bytes: int, backups: int) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.backups = backups
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = _Lock(f"{path}.lock")
        self._fd = self._open()

    def _open(self) -> int:
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | _NOFOLLOW, 0o640)
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":  # a line torn by a writer killed mid-write ends here,
            _write_all(fd, b"\n")  # so the next record starts a line of its own (readers skip the torn one)
        return fd

    def write(self, line: bytes) -> None:
        """Append one whole line, rotating first when it would not fit."""
        with self._lock:
            self._follow()
            size = os.fstat(self._fd).st_size
            if size and size + len(line) > self.max_bytes:
                self._rotate()
            _write_all(self._fd, line)

    def _follow(self) -> None:
        """Reopen when another process rotated the file away from under this one."""
        try:
            current = os.stat(self.path).st_ino
        except FileNotFoundError:
            current = -1
        if current != os.fstat(self._fd).st_ino:
            os.close(self._fd)
            self._fd = self._open()

    def _rotate(self) -> None:
        os.close(self._fd)
        if self.backups == 0:
            self.path.unlink(missing_ok=True)
        else:
            for i in range(self.backups - 1, 0, -1):
                older = self.path.with_name(f"{self.path.name}.{i}")
                if older.exists():
                    os.replace(older, self.path.with_name(f"{self.path.name}.{i + 1}"))
            os.replace(self.path, self.path.with_name(f"{self.path.name}.1"))
        self._fd = self._open()

    def close(self) -> None:
        """Close the file and the lock."""
        os.close(self._fd)
        self._lock.close()


def check_sink(kind: str, path: str | None) -> None:
    """Open the file sink and its lock as the writer will: ConfigError naming decision_log.path when they cannot
    be (a directory, a symbolic link, a folder without write permission, a path under /proc)."""
    if kind != "file" or path is None:
        return
    try:
        FileSink(path, 1 << 16, 0).close()
    except OSError as exc:
        where = exc.filename if isinstance(exc.filename, str) else path
        why = (f"{where!r} is a symbolic link (refused: records would go where it points)"
               if exc.errno == errno.ELOOP else f"{where!r}: {exc.strerror or exc}")
        raise ConfigError(f"decision_log.path: cannot write {path!r}: {why}") from None


def open_sink(kind: str, path: str | None, max_bytes: int, backups: int,
              lock: str | None = None) -> StdoutSink | FileSink:
    """The sink ``decision_log.sink`` names (``lock``: see StdoutSink)."""
    if kind == "file":
        assert path is not None
        return FileSink(path, max_bytes, backups)
    return StdoutSink(lock)
