"""The feature memo: a worker's bounded store of memories' own features (``core.features``), least recently used
out first.

One per worker process, owned by the runtime (``grpc.service``) and lent to each call (``api.call.Call.features``);
the core reads and writes it only through ``core.features.FeatureStore``. Its size is counted in bytes, an upper
bound on what its entries hold (``ENTRY_BYTES`` per entry: a 16-byte key object, a small int and the ordered
dict's slot and node; tests/unit/test_feature_memo.py checks it with tracemalloc), and never passes
``max_bytes`` (``server.feature_memo_bytes``; 0 = off: ``of`` gives None). Handler threads share it, so each
lookup and store of a batch takes one lock.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

# What one entry holds, at most: a 16-byte bytes key (49 by sys.getsizeof), an int of packed features (32-36),
# the dict's entry and index and the OrderedDict's node. tracemalloc saw at most 197 bytes per entry from 1,000 to
# 90,000 entries (the most just after the dict grows); 240 leaves room.
ENTRY_BYTES = 240
Counted = Callable[[int, int], None]  # (hits, misses) of one lookup


class FeatureMemo:
    """Packed features by key, at most ``max_bytes`` of them; ``counted`` hears each lookup's hits and misses."""

    def __init__(self, max_bytes: int, counted: Counted | None = None) -> None:
        if max_bytes < ENTRY_BYTES:
            raise ValueError(f"a feature memo needs at least {ENTRY_BYTES} bytes, not {max_bytes}")
        self.max_bytes = max_bytes
        self._held: OrderedDict[bytes, int] = OrderedDict()
        self._lock = threading.Lock()
        self._counted = counted
        self.hits = 0
        self.misses = 0
        # The keys' salt (``core.features``): random per memo, so no caller can aim two contents at one key.
        self.salt = os.urandom(16)

    @classmethod
    def of(cls, max_bytes: int, counted: Counted | None = None) -> FeatureMemo | None:
        """A memo of ``max_bytes``, or None when it is 0 (off)."""
        return cls(max_bytes, counted) if max_bytes else None

    @property
    def size_bytes(self) -> int:
        """The bytes its entries count for (``ENTRY_BYTES`` each)."""
        return len(self._held) * ENTRY_BYTES

    def __len__(self) -> int:
        return len(self._held)

    def lookup(self, keys: Sequence[bytes]) -> list[int | None]:
        """The value under each key, None where there is none; each found becomes the most recently used."""
        held = self._held
        with self._lock:
            found = [held.get(k) for k in keys]
            for k, v in zip(keys, found, strict=True):
                if v is not None:
                    held.move_to_end(k)
            hits = len(found) - found.count(None)
            self.hits += hits
            self.misses += len(found) - hits
        if self._counted is not None:
            self._counted(hits, len(found) - hits)
        return found

    def store(self, keys: Sequence[bytes], values: Sequence[int]) -> None:
        """Keep each value under its key, dropping the least recently used entries past ``max_bytes``."""
        room = self.max_bytes // ENTRY_BYTES
        held = self._held
        with self._lock:
            held.update(zip(keys, values, strict=True))
            for _ in range(len(held) - room):
                held.popitem(last=False)
