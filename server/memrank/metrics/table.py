"""Rows of histogram counts kept by label set, in memory or in a file another process reads.

A row is ``width`` float64 numbers (a histogram's bucket counts and its sum) under a label key. One process
writes a table; ``add`` updates any number of rows with one numpy addition. A table in a file (a supervisor's
worker) lives in a memory-mapped file that the supervisor reads at any moment (``read_tables``), so its counts
reach /metrics without a hand-off and stay counted after the worker dies.

File layout, little-endian: a header of 4 uint64 (``MAGIC``, rows in use, row capacity, label capacity in
bytes), then ``capacity x width`` float64, then the labels: one JSON array per row, each ended by a newline.
A new row's label is written before the row count that makes it visible, so a reader that sees ``n`` rows
finds ``n`` labels. A full file is replaced by a larger copy (``os.replace``), never resized in place: a
reader holds either the old file or the new one, both whole.
"""

from __future__ import annotations

import json
import mmap
import os
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

MAGIC = 0x4D454D52414E4B31  # b"MEMRANK1" read as a big-endian number: a file of another kind is refused
SUFFIX = ".rows"  # not prometheus_client's ".db": its multiprocess collector reads only those
_HEADER = 4  # uint64 words
Key = tuple[str, ...]


class Table:
    """Rows of ``width`` float64 counts by label key; ``directory`` given: kept in a file there."""

    def __init__(self, width: int, directory: str | None = None, name: str = "table", rows: int = 256,
                 label_bytes: int = 32768) -> None:
        self.width = width
        self.keys: list[Key] = []
        self._index: dict[Key, int] = {}
        self._label_used = 0
        self._path = (Path(directory) / f"{name}-{os.getpid()}-{uuid.uuid4().hex}{SUFFIX}") if directory else None
        self._map: mmap.mmap | None = None
        self._open(rows, label_bytes)

    @property
    def values(self) -> np.ndarray:
        """The rows in use: (rows, width) float64, a view (read it under the writer's lock)."""
        return self._data[:len(self.keys)]

    def rows(self, keys: Sequence[Key]) -> np.ndarray:
        """Row numbers of ``keys``, in their order (a row added for each new one)."""
        new = [key for key in dict.fromkeys(keys) if key not in self._index]
        if new:
            self._append(new)
        return np.fromiter(map(self._index.__getitem__, keys), dtype=np.intp, count=len(keys))

    def add(self, rows: np.ndarray, amounts: np.ndarray) -> None:
        """Add ``amounts`` (len(rows), width) to those rows (distinct rows: numpy adds each once)."""
        self._data[rows] += amounts

    def _append(self, keys: list[Key]) -> None:
        labels = b"".join(json.dumps(list(key)).encode() + b"\n" for key in keys)
        rows = len(self.keys) + len(keys)
        if rows > self._capacity or self._label_used + len(labels) > self._label_capacity:
            self._grow(max(rows, 2 * self._capacity), max(self._label_used + len(labels), 2 * self._label_capacity))
        if self._map is not None:
            start = self._labels_at + self._label_used
            self._map[start:start + len(labels)] = labels
            self._header[1] = rows  # after the labels: a reader that sees the rows finds their labels
        self._label_used += len(labels)
        for key in keys:
            self._index[key] = len(self.keys)
            self.keys.append(key)

    def _open(self, rows: int, label_bytes: int) -> None:
        self._capacity, self._label_capacity = rows, label_bytes
        self._labels_at = 8 * (_HEADER + rows * self.width)
        if self._path is None:
            self._data = np.zeros((rows, self.width))
            return
        self._map = _mapped(self._path, self._labels_at + label_bytes)
        self._header = np.frombuffer(self._map, dtype="<u8", count=_HEADER)
        self._header[:] = (MAGIC, len(self.keys), rows, label_bytes)
        self._data = np.frombuffer(self._map, dtype="<f8", count=rows * self.width, offset=8 * _HEADER).reshape(
            rows, self.width)

    def _grow(self, rows: int, label_bytes: int) -> None:
        """A larger table holding the same rows; a file is copied whole, then put in the old one's place."""
        old, old_labels, old_map, path = self.values.copy(), self._label_used, self._map, self._path
        if path is None:
            self._open(rows, label_bytes)
            self._data[:len(old)] = old
            return
        assert old_map is not None
        labels = bytes(old_map[self._labels_at:self._labels_at + old_labels])
        self._path = path.with_name(path.name + ".new")  # no SUFFIX: readers skip it until it is whole
        self._open(rows, label_bytes)
        self._data[:len(old)] = old
        assert self._map is not None
        self._map[self._labels_at:self._labels_at + old_labels] = labels
        os.replace(self._path, path)
        self._path = path  # the old mapping is unmapped with its last view


def _mapped(path: Path, size: int) -> mmap.mmap:
    """A new zero-filled file of ``size`` bytes, mapped for writing."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.ftruncate(fd, size)
        return mmap.mmap(fd, size)
    finally:
        os.close(fd)


def read_tables(directory: str, name: str, width: int) -> Iterator[tuple[Key, np.ndarray]]:
    """(label key, row) of every row of every ``name`` table file in ``directory``, file by file."""
    for path in sorted(Path(directory).glob(f"{name}-*{SUFFIX}")):
        try:
            data = path.read_bytes()  # one copy: the header first, so its row count covers the labels after it
        except FileNotFoundError:  # removed meanwhile (a supervisor's clean-up)
            continue
        magic, rows, capacity, _ = np.frombuffer(data, dtype="<u8", count=_HEADER).tolist()
        if magic != MAGIC:
            raise ValueError(f"{path}: not a memrank metrics table")
        values = np.frombuffer(data, dtype="<f8", count=rows * width, offset=8 * _HEADER).reshape(rows, width)
        labels = data[8 * (_HEADER + capacity * width):].split(b"\n", rows)[:rows]
        for label, row in zip(labels, values, strict=True):
            yield tuple(json.loads(label)), row
