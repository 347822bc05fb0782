"""The in-flight byte budget: how many request bytes a worker handles at once, so N big calls cannot exhaust memory.

A call's request bytes (its size on the wire) are taken from the budget once the
request has arrived; a call whose bytes do not fit is refused at once with
RESOURCE_EXHAUSTED naming the budget (waiting would keep its request in memory
meanwhile). When its handler answers, the call holds the larger of its request
and its response, and gives them back only once its handler thread is done and
its response has left (or the call ended otherwise): a client that does not
read its responses holds budget, not memory outside it (``Hold``). Handling a request takes
up to ``PEAK_RATIO`` times its wire size of memory at its peak (measured: README,
Reliability), so a worker's memory stays below its baseline plus ``PEAK_RATIO``
x the budget, plus the requests grpc is still receiving (it buffers a request
whole before the server sees it; twice its size, with the copy handed over).

``server.max_inflight_bytes`` 0 (the default) derives the budget from the memory
the process is given (the cgroup limit, else the machine's memory):
(limit / workers - ``BASELINE_BYTES`` - ``server.feature_memo_bytes``) / ``PEAK_RATIO``,
at least one maximal request (``server.max_message_bytes``).

One connection may hold at most ``server.max_unsent_bytes_per_connection`` of
that budget in responses it has not been sent (``Unsent``; 0, the default: a
quarter of the budget): past it, its new calls are refused, and the other
connections keep the rest of the budget.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger("memrank.rpc")

# Peak memory of one call over its request's wire size, rounded up from `python -m bench.memory` (a fresh server,
# the request twice; every later call peaks no higher): 10.8 for the largest request the defaults allow by content
# (1,600 candidates of 40 KB, 61 MiB), 9 at 400 x 384 dims; 6.5 and 6.7 in the run of 2026-12-03 (its "fresh ratio",
# bench/results.json); 3.4 and 4.9 (5.0 at 1,600 x 384) in the run of 2026-12-06; kept at 12 for margin.
PEAK_RATIO = 12
BASELINE_BYTES = 160 << 20  # a worker's memory before any call (interpreter, numpy, grpc, the decision log writer)
_CGROUP_FILES = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
_UNLIMITED = 1 << 60  # cgroup v1 writes a huge number for "no limit"


def memory_limit() -> int:
    """Bytes of memory this process may use: its cgroup's limit, else the machine's memory."""
    for name in _CGROUP_FILES:
        try:
            text = Path(name).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < _UNLIMITED:
            return int(text)
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return 4 << 30


def auto_budget(limit: int, workers: int, max_message_bytes: int, kept: int = 0) -> int:
    """The budget ``server.max_inflight_bytes: 0`` means for a worker of ``workers`` sharing ``limit`` bytes, each
    keeping ``kept`` bytes besides its calls (its feature memo, ``server.feature_memo_bytes``)."""
    per_worker = limit // max(workers, 1) - BASELINE_BYTES - kept
    return max(max_message_bytes, per_worker // PEAK_RATIO)


def unsent_cap(setting: int, budget: int) -> int:
    """The unsent-response bytes one connection may hold: ``server.max_unsent_bytes_per_connection``, or (0) a
    quarter of the worker's in-flight budget, so that a connection that stops reading leaves the other
    connections three quarters of it (four such connections fill it)."""
    return setting or max(1, budget // 4)


def memory_needed(workers: int, budget: int, kept: int = 0) -> int:
    """Memory ``workers`` workers need at most with this budget each, each keeping ``kept`` bytes besides its calls
    (what a container limit must cover)."""
    return workers * (BASELINE_BYTES + kept + PEAK_RATIO * budget)


class ByteBudget:
    """Bytes of the requests taken and not yet handled; thread-safe (taken on the event loop, given back by the
    handler thread)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.used = 0
        self._lock = threading.Lock()

    def take(self, size: int) -> bool:
        """Take ``size`` bytes when they fit; False (nothing taken) when they do not."""
        with self._lock:
            if self.used + size > self.total:
                return False
            self.used += size
            return True

    def force(self, size: int) -> None:
        """Take ``size`` bytes whether they fit or not (``used`` may pass ``total``)."""
        with self._lock:
            self.used += size

    def release(self, size: int) -> None:
        """Give ``size`` bytes back."""
        with self._lock:
            self.used -= size


class Hold:
    """The bytes one call holds in a budget, given back once both its handler thread and its RPC are done.

    Either may end first: a client that cancels leaves the thread working on the request; a response that
    does not leave keeps the RPC open after the thread is done. Thread-safe.
    """

    def __init__(self, budget: ByteBudget, size: int) -> None:
        self._budget = budget
        self.size = size  # taken by the caller
        self._owners = 2  # the handler thread and the RPC
        self._lock = threading.Lock()

    def grow(self, size: int) -> None:
        """Hold ``size`` bytes in all when more than now (the response outgrew the request), whether they fit
        or not: the work is done, and the budget refuses new calls until they are given back."""
        with self._lock:
            extra = size - self.size
            if extra <= 0 or self._owners == 0:
                return
            self.size = size
        self._budget.force(extra)

    def thread_done(self, _job: object = None) -> None:
        """The handler thread is done with the call."""
        self._let_go()

    def call_done(self, _context: object = None) -> None:
        """The RPC ended: its status sent (the response left), or the call cancelled."""
        self._let_go()

    def _let_go(self) -> None:
        with self._lock:
            self._owners -= 1
            size = self.size if self._owners == 0 else 0
        if size:
            self._budget.release(size)


class Unsent:
    """The bytes of the responses each connection has been answered and not yet sent, by grpc peer string (one per
    TCP connection: the client's address and port). The event loop's only (calls start and their done callbacks
    run there): no lock.

    A connection over ``cap`` has its new calls refused until enough of its responses have left (or the send
    timeout closed it). Its calls already taken still answer, so it can pass the cap by the responses of the
    calls it had in progress when it crossed (at most ``server.max_streams_per_connection`` - 1 of them).
    Crossing the cap is logged once each time; each refused call is counted (``observe``, by method).
    """

    def __init__(self, cap: int, observe: Callable[[str], None] | None = None) -> None:
        self.cap = cap
        self._observe = observe or (lambda _method: None)
        self._held: dict[str, int] = {}

    def held(self, peer: str) -> int:
        """Bytes of responses answered on ``peer``'s connection and not yet sent."""
        return self._held.get(peer, 0)

    def refuses(self, peer: str, method: str) -> bool:
        """True (and counted) when ``peer``'s connection holds more than the cap: its new call is to be refused."""
        if self._held.get(peer, 0) <= self.cap:
            return False
        self._observe(method)
        return True

    def add(self, peer: str, size: int) -> Callable[[object], None]:
        """Count a response of ``size`` bytes answered on ``peer``'s connection; the callback given back uncounts it
        (a grpc.aio done callback: the response has left, or the call ended otherwise)."""
        before = self._held.get(peer, 0)
        self._held[peer] = before + size
        if before <= self.cap < before + size:
            log.warning("rpc connection over server.max_unsent_bytes_per_connection: its new calls are refused "
                        "until its responses leave (a client that does not read)",
                        extra={"peer": peer, "unsent_bytes": before + size, "limit_bytes": self.cap})

        def left(_context: object = None) -> None:
            held = self._held.get(peer, 0) - size
            if held > 0:
                self._held[peer] = held
            else:
                self._held.pop(peer, None)

        return left
