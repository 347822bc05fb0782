"""The in-flight byte budget: bytes fit or are refused whole, release from any thread, and the auto budget and the
memory need follow the documented formula."""

from __future__ import annotations

import threading

from memrank.grpc.inflight import BASELINE_BYTES, PEAK_RATIO, ByteBudget, auto_budget, memory_needed


def test_bytes_are_taken_when_they_fit_and_refused_whole_when_not() -> None:
    budget = ByteBudget(100)
    assert budget.take(60) and budget.take(40) and budget.used == 100
    assert not budget.take(1) and budget.used == 100  # a refusal takes nothing
    threads = [threading.Thread(target=budget.release, args=(10,)) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert budget.used == 0 and budget.take(100) and not budget.take(1)


def test_auto_budget_and_memory_need_follow_the_formula() -> None:
    mib = 1 << 20
    # 1 GiB, one worker: (1024 - 160) MiB / 12 = 72 MiB of requests at once
    assert auto_budget(1024 * mib, 1, 64 * mib) == (1024 * mib - BASELINE_BYTES) // PEAK_RATIO
    assert auto_budget(512 * mib, 2, 64 * mib) == 64 * mib  # never below one maximal request
    assert auto_budget(1024 * mib, 1, 64 * mib) == 72 * mib
    assert memory_needed(2, 64 * mib) == 2 * (160 * mib + 12 * 64 * mib)
