"""When the writer makes its records durable: ``decision_log.fsync`` (file sink only; a pipe has nothing to sync).

* ``never``: the kernel writes the page cache back when it likes (ext4: about 5 to 30 s); a power cut or a
  file system forced read-only loses what it had not written, though each record was counted written.
* ``interval`` (the default): a thread of the writer process fsyncs, every ``decision_log.fsync_interval_seconds``,
  what was written since the last one: at most that long of records lost to a power cut, for one fsync a
  period (and none while idle). A file rotated or reopened is fsynced as it is closed (``FileSink``'s
  ``sync_on_close``): the next period's fsync reaches the new file only.
* ``every``: an fsync after each record, before it is reported written: nothing reported written is lost, at
  the cost of a disk flush per record (bench/decision_log_ab.py measures it).

A failed fsync (EIO, ENOSPC on some file systems) is counted and logged as a failed attempt; it is not
retried: after a failed fsync the kernel may have dropped the dirty pages, and a record written again would
be written twice.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol


class Syncable(Protocol):
    def sync(self) -> None: ...


class Durability:
    """The fsync policy over one sink: ``written()`` after each record, ``close()`` before the sink closes."""

    def __init__(self, sink: Syncable, policy: str, interval: float, on_error: Callable[[OSError], None]) -> None:
        self._sink, self._policy, self._on_error = sink, policy, on_error
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if policy == "interval":
            self._thread = threading.Thread(target=self._every, args=(interval,), daemon=True,
                                            name="memrank-decision-log-fsync")
            self._thread.start()

    def written(self) -> None:
        """One record was written: sync it now under ``every``."""
        if self._policy == "every":
            self._sync()

    def close(self) -> None:
        """Stop the interval thread; sync what is left (unless ``never``)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._policy != "never":
            self._sync()

    def _every(self, interval: float) -> None:
        while not self._stop.wait(interval):
            self._sync()

    def _sync(self) -> None:
        try:
            self._sink.sync()
        except OSError as exc:
            self._on_error(exc)
