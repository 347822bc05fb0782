"""The feature memo's bound, eviction order, counts, off switch and thread safety."""

from __future__ import annotations

import hashlib
import threading
import tracemalloc

import pytest

from memrank.feature_memo import ENTRY_BYTES, FeatureMemo


def _key(i: int) -> bytes:
    return hashlib.blake2b(str(i).encode(), digest_size=16).digest()


def test_zero_bytes_is_off() -> None:
    assert FeatureMemo.of(0) is None
    assert isinstance(FeatureMemo.of(4096), FeatureMemo)


def test_too_small_a_memo_is_refused_with_its_size() -> None:
    with pytest.raises(ValueError, match="at least 240 bytes, not 100"):
        FeatureMemo(100)


def test_the_bytes_never_pass_the_limit() -> None:
    memo = FeatureMemo(10 * ENTRY_BYTES + 5)  # room for 10 entries
    for start in range(0, 400, 7):
        memo.store([_key(i) for i in range(start, start + 7)], list(range(start, start + 7)))
        assert memo.size_bytes <= memo.max_bytes
    assert len(memo) == 10


def test_the_least_recently_used_goes_first() -> None:
    memo = FeatureMemo(3 * ENTRY_BYTES)
    memo.store([_key(1), _key(2), _key(3)], [10, 20, 30])
    assert memo.lookup([_key(1)]) == [10]  # 1 is now the most recently used: 2 is the oldest
    memo.store([_key(4)], [40])
    assert memo.lookup([_key(1), _key(2), _key(3), _key(4)]) == [10, None, 30, 40]


def test_lookups_are_counted_and_reported() -> None:
    heard: list[tuple[int, int]] = []
    memo = FeatureMemo(4096, lambda hits, misses: heard.append((hits, misses)))
    memo.store([_key(1)], [0])  # a stored 0 is a value, not a miss
    assert memo.lookup([_key(1), _key(2), _key(1)]) == [0, None, 0]
    assert heard == [(2, 1)]
    assert (memo.hits, memo.misses) == (2, 1)


@pytest.mark.parametrize("n", [1_000, 5_500, 22_000])  # 5,500 and 22,000: just after the dict has grown
def test_entry_bytes_bound_what_an_entry_holds(n: int) -> None:
    """ENTRY_BYTES is at least what tracemalloc sees an entry keep: its key and value, made for it as a call
    makes them, and the ordered dict's slot and node."""
    memo = FeatureMemo(n * ENTRY_BYTES)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    memo.store([_key(i) for i in range(n)], [(i << 10) | 0x3FF for i in range(n)])  # as big as packed features
    kept = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(memo) == n
    assert kept / n <= ENTRY_BYTES


def test_threads_sharing_a_memo_keep_its_bound_and_counts() -> None:
    memo = FeatureMemo(50 * ENTRY_BYTES)
    lookups = 0
    lock = threading.Lock()

    def work(t: int) -> None:
        nonlocal lookups
        for r in range(200):
            keys = [_key((t * 7 + r + j) % 120) for j in range(9)]
            found = memo.lookup(keys)
            memo.store([k for k, v in zip(keys, found, strict=True) if v is None], [1] * found.count(None))
            with lock:
                lookups += len(keys)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert memo.size_bytes <= memo.max_bytes
    assert memo.hits + memo.misses == lookups
