"""The S3 sink's records in memory: one open object per hour of the records' time, sealed when full or old,
held (with the objects waiting to upload) within a byte budget.

A record goes to the object of its partition, ``dt=YYYY-MM-DD/hour=HH`` of its ``server_time`` in UTC, so a
reader can select hours by key. An object is sealed once its lines reach ``max_bytes`` or ``max_records``, or
``max_seconds`` after its first line; sealed objects wait for the uploader. Every line held, open or sealed,
counts against ``buffer_bytes`` until its object is ``release``d (uploaded, or given up): a line that would
take the total past it is refused (the caller drops and counts it). Not thread-safe: the sink holds a lock.
"""

from __future__ import annotations

import collections
import gzip
import os
import re
import socket
from dataclasses import dataclass, field
from datetime import UTC, datetime

from memrank.decisions.capture import DECISION, FEEDBACK


def partition(server_time: float) -> str:
    """``dt=YYYY-MM-DD/hour=HH`` of an epoch time, in UTC."""
    return datetime.fromtimestamp(server_time, UTC).strftime("dt=%Y-%m-%d/hour=%H")


def writer_name(started: float, host: str | None = None, pid: int | None = None) -> str:
    """``<host>-<pid>-<start>``: unique to one writer process (a pod's host name, the process, its start to the
    millisecond, UTC), so objects of different writers never share a key."""
    raw = host if host is not None else socket.gethostname()
    host = re.sub(r"[^A-Za-z0-9._]", "_", raw) or "host"
    when = datetime.fromtimestamp(started, UTC)
    return f"{host}-{os.getpid() if pid is None else pid}-{when:%Y%m%dT%H%M%S}{when.microsecond // 1000:03d}Z"


@dataclass
class Batch:
    """One object's lines, in arrival order."""

    partition: str
    opened: float  # monotonic seconds at its first line
    lines: list[bytes] = field(default_factory=list)
    size: int = 0  # bytes of its lines
    kinds: collections.Counter[str] = field(default_factory=collections.Counter)  # records by kind

    @property
    def records(self) -> int:
        """How many records it holds."""
        return len(self.lines)

    def body(self) -> bytes:
        """The object's bytes: its lines gzipped (mtime 0: the same lines always give the same bytes)."""
        return gzip.compress(b"".join(self.lines), compresslevel=6, mtime=0)

    def reports(self) -> bytes:
        """One report line per record written (``d`` decision, ``f`` feedback: see decisions.process)."""
        return b"d\n" * self.kinds[DECISION] + b"f\n" * self.kinds[FEEDBACK]


class Batches:
    """Open and sealed objects within limits (see the module's docstring)."""

    def __init__(self, max_bytes: int, max_records: int, max_seconds: float, buffer_bytes: int) -> None:
        self.max_bytes, self.max_records, self.max_seconds = max_bytes, max_records, max_seconds
        self.buffer_bytes = buffer_bytes
        self.held = 0  # bytes of every line held, open or sealed and not yet released
        self._open: dict[str, Batch] = {}
        self._sealed: collections.deque[Batch] = collections.deque()

    def add(self, part: str, kind: str, line: bytes, now: float) -> bool:
        """Put one line in its partition's open object (sealing it when full); False when over the budget."""
        if self.held + len(line) > self.buffer_bytes:
            return False
        batch = self._open.get(part)
        if batch is None:
            batch = self._open[part] = Batch(part, now)
        batch.lines.append(line)
        batch.size += len(line)
        batch.kinds[kind] += 1
        self.held += len(line)
        if batch.size >= self.max_bytes or batch.records >= self.max_records:
            self._seal(part)
        return True

    def take(self, now: float, everything: bool = False) -> Batch | None:
        """The next object to upload: sealed ones first, then any open one past ``max_seconds`` (or, with
        ``everything``, any open one); None when there is none."""
        for part, batch in list(self._open.items()):
            if everything or now - batch.opened >= self.max_seconds:
                self._seal(part)
        return self._sealed.popleft() if self._sealed else None

    def next_due(self) -> float | None:
        """When the oldest open object falls due (monotonic seconds); None when nothing is open."""
        oldest = min((b.opened for b in self._open.values()), default=None)
        return None if oldest is None else oldest + self.max_seconds

    def ready(self) -> bool:
        """Whether a sealed object waits."""
        return bool(self._sealed)

    def release(self, batch: Batch) -> None:
        """An object taken is done with (uploaded or given up): its bytes leave the budget."""
        self.held -= batch.size

    def _seal(self, part: str) -> None:
        self._sealed.append(self._open.pop(part))
