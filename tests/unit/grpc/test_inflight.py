"""The in-flight byte budget: bytes fit or are refused whole, release from any thread, a call holds its bytes until
both its thread and its RPC are done, and the auto budget and the memory need follow the documented formula."""

from __future__ import annotations

import threading

from memrank.grpc.inflight import (
    BASELINE_BYTES,
    PEAK_RATIO,
    ByteBudget,
    Hold,
    Unsent,
    auto_budget,
    memory_needed,
    unsent_cap,
)


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
    # each worker's feature memo (64 MiB) comes off its share first: (1024 - 160 - 64) MiB / 12, written out
    assert auto_budget(1024 * mib, 1, 16 * mib, 64 * mib) == 800 * mib // 12
    assert memory_needed(2, 64 * mib, 64 * mib) == 2 * (160 * mib + 64 * mib + 12 * 64 * mib)


def test_a_call_holds_its_bytes_until_both_its_thread_and_its_rpc_are_done() -> None:
    for first, second in (("thread_done", "call_done"), ("call_done", "thread_done")):
        budget = ByteBudget(100)
        assert budget.take(30)
        hold = Hold(budget, 30)
        getattr(hold, first)()
        assert budget.used == 30  # a response not yet sent, or a thread still working on a cancelled call
        getattr(hold, second)()
        assert budget.used == 0


def test_a_response_larger_than_its_request_is_held_at_its_size_even_past_the_budget() -> None:
    budget = ByteBudget(100)
    assert budget.take(60)
    hold = Hold(budget, 60)
    hold.grow(50)  # smaller than the request: nothing more
    assert budget.used == 60
    hold.grow(120)  # the work is done: held whole, and new calls are refused until it is given back
    assert budget.used == 120 and not budget.take(1)
    hold.thread_done()
    hold.call_done()
    assert budget.used == 0


def test_a_connection_is_refused_once_its_unsent_responses_pass_the_cap_and_served_once_they_leave() -> None:
    refused: list[str] = []
    unsent = Unsent(100, refused.append)
    a, b = "ipv4:127.0.0.1:5001", "ipv4:127.0.0.1:5002"
    first = unsent.add(a, 60)
    second = unsent.add(a, 40)
    assert unsent.held(a) == 100 and not unsent.refuses(a, "Rank")  # at the cap, not over it
    third = unsent.add(a, 1)
    assert unsent.refuses(a, "Rank") and not unsent.refuses(b, "Rank")  # the other connection is served
    assert refused == ["Rank"]
    first(None)
    assert unsent.held(a) == 41 and not unsent.refuses(a, "Rank")
    second(None)
    third(None)
    assert unsent.held(a) == 0 and unsent.refuses(a, "Rank") is False and refused == ["Rank"]


def test_the_default_unsent_cap_is_a_quarter_of_the_budget() -> None:
    assert unsent_cap(0, 72 << 20) == 18 << 20
    assert unsent_cap(5_000, 72 << 20) == 5_000  # set: as set, even above the budget
    assert unsent_cap(0, 3) == 1
