"""Where record lines go: stdout or a size-rotated file, one whole line per write across processes.

Several workers (each with its own writer process) share one sink. A line of
any size is written while holding an exclusive ``flock`` on a lock file shared
by all of them, so lines never interleave, even past the pipe buffer (a pipe
write of more than PIPE_BUF bytes is not atomic) and across file rotation. The
lock file is ``<path>.lock`` for a file sink; for stdout the supervisor names
one in ``MEMRANK_DECISION_LOG_LOCK`` (one process alone needs none).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import threading
from pathlib import Path

from memrank.core.errors import ConfigError

log = logging.getLogger("memrank.decisions")
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
        self._torn = False  # a failed write left part of a line: the next one ends it first

    def write(self, line: bytes) -> None:
        """Write one whole line (after a newline ending the line a failed write tore; a stream cannot be cut)."""
        data = b"\n" + line if self._torn else line
        view = memoryview(data)
        with self._lock:
            try:
                while view:
                    view = view[os.write(1, view):]
            except OSError:
                done = len(data) - len(view)
                if done:
                    self._torn = data[done - 1:done] != b"\n"
                raise
        self._torn = False

    def sync(self) -> None:
        """Nothing to sync: a pipe or a terminal (fsync would fail with EINVAL)."""

    def close(self) -> None:
        """Release the lock file."""
        self._lock.close()


class FileSink:
    """JSON lines appended to ``path``; before a line would take it past ``max_bytes``, the file is rotated:
    path.{backups-1} -> path.{backups}, ..., path -> path.1 (the oldest beyond ``backups`` is removed).

    A failed write (a full disk, a read-only or immutable folder, the path replaced) raises ``OSError`` and
    leaves no handle behind: the bytes of the line that did reach the file are cut off again, and the next
    ``write`` opens the path afresh (ending, with a newline, a torn line it could not cut). A file renamed
    away (logrotate's ``create``) is followed at the next line; a file that shrank under its writer
    (logrotate's ``copytruncate``) is warned about once: O_APPEND writes the next line at its new end.
    """

    def __init__(self, path: str, max_bytes: int, backups: int, sync_on_close: bool = False) -> None:
        self.path = Path(path)
        self.sync_on_close = sync_on_close  # fsync a file written to before it is closed (rotated, reopened)
        self.max_bytes = max_bytes
        self.backups = backups
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = _Lock(f"{path}.lock")
        self._mutex = threading.Lock()  # write and sync (a thread of the writer process), never both at once
        self._dirty = False  # written since the last fsync
        self._end = 0  # the file's size after this writer's last line: smaller later means truncated under it
        self.truncations = 0  # times the file was found shorter than this writer left it
        try:
            with self._lock:  # another worker's writer may be in mid-line: its last byte is not a torn line's
                self._fd: int | None = self._open()
        except OSError:
            self._lock.close()  # a writer retrying its start once a second must not leak a descriptor a try
            raise

    def _open(self) -> int:
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | _NOFOLLOW, 0o640)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":  # a line torn by a writer killed mid-write (or a
                _write_all(fd, b"\n")  # full disk) ends here: the next record starts a line of its own
                size += 1
        except OSError:
            os.close(fd)
            raise
        self._end = size
        return fd

    def write(self, line: bytes) -> None:
        """Append one whole line, rotating first when it would not fit; on OSError nothing is left open."""
        with self._lock, self._mutex:
            try:
                fd = self._current()
                size = os.fstat(fd).st_size
                if size < self._end:
                    self._truncated(size)
                if size and size + len(line) > self.max_bytes:
                    fd = self._rotate()
                    size = os.fstat(fd).st_size
                try:
                    _write_all(fd, line)
                except OSError:
                    with contextlib.suppress(OSError):  # cut the part that was written: no torn line is left
                        if os.fstat(fd).st_size > size:
                            os.ftruncate(fd, size)
                    raise
                self._end = size + len(line)
                self._dirty = True
            except OSError:
                self._drop()
                raise

    def sync(self) -> None:
        """fsync what was written since the last sync (nothing to do when nothing was)."""
        with self._mutex:
            if self._dirty and self._fd is not None:
                self._dirty = False
                os.fsync(self._fd)

    def _current(self) -> int:
        """The open file at ``path``: opened afresh after a failure, reopened when another process rotated the
        file away from under this one."""
        if self._fd is not None:
            try:
                current = os.stat(self.path).st_ino
            except FileNotFoundError:
                current = -1
            if current == os.fstat(self._fd).st_ino:
                return self._fd
            self._drop()
        self._fd = self._open()
        return self._fd

    def _truncated(self, size: int) -> None:
        self.truncations += 1
        if self.truncations == 1:  # once per writer: a copytruncate rotation every night is not news
            log.warning("decision log file shrank under its writer (logrotate copytruncate?): records written "
                        "between the copy and the truncation are lost; rotate by rename instead (logrotate "
                        "without copytruncate, or decision_log.max_bytes); writing on at the file's new end",
                        extra={"path": str(self.path), "size": size, "was": self._end})

    def _drop(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            if self._dirty and self.sync_on_close:  # the next sync would reach the next file, not this one
                self._dirty = False
                with contextlib.suppress(OSError):  # after a failed write: counted there already
                    os.fsync(fd)
            with contextlib.suppress(OSError):
                os.close(fd)

    def _rotate(self) -> int:
        self._drop()
        if self.backups == 0:
            self.path.unlink(missing_ok=True)
        else:
            for i in range(self.backups - 1, 0, -1):
                older = self.path.with_name(f"{self.path.name}.{i}")
                if older.exists():
                    os.replace(older, self.path.with_name(f"{self.path.name}.{i + 1}"))
            os.replace(self.path, self.path.with_name(f"{self.path.name}.1"))
        self._fd = self._open()
        return self._fd

    def close(self) -> None:
        """Close the file and the lock."""
        self._drop()
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
              sync_on_close: bool = False, lock: str | None = None) -> StdoutSink | FileSink:
    """The sink ``decision_log.sink`` names (``sync_on_close``: a file fsynced before it is rotated away;
    ``lock``: see StdoutSink)."""
    if kind == "file":
        assert path is not None
        return FileSink(path, max_bytes, backups, sync_on_close)
    return StdoutSink(lock)
