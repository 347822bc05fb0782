"""A started server and how it stops: the event loop it runs on, the drain, the listeners' end.

Each server runs on an asyncio event loop of its own thread (grpc.aio): the loop reads requests and answers
health and reflection itself; ``Running.stop`` drains it (see its docstring for the order of things).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc
from grpc_health.v1 import health

from memrank.grpc.intake import Intake
from memrank.grpc.service import RankingService
from memrank.grpc.tracing import Tracing

log = logging.getLogger("memrank.server")
T = TypeVar("T")

DRAIN_POLL_SECONDS = 0.02
ACCEPT_AFTER_NOT_SERVING_SECONDS = 0.5  # calls still taken after health turns NOT_SERVING


class Loop:
    """An asyncio event loop running on its own thread; the servers of one Running live on it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="memrank-grpc-loop", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    @property
    def closed(self) -> bool:
        """True once close() ran."""
        return bool(self.loop.is_closed())

    def close(self) -> None:
        """Stop the loop and its thread."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


@dataclass
class Running:
    """A started server and what is needed to stop it."""

    server: grpc.aio.Server
    port: int
    health: health.aio.HealthServicer
    loop: Loop
    intake: Intake
    health_server: grpc.aio.Server | None = None  # the plaintext health-only listener (server.health_address)
    health_port: int = 0
    service: RankingService | None = None
    tracing: Tracing | None = None

    def stop(self, grace: float, exiting: bool = False) -> None:
        """Drain, then stop. A second call does nothing.

        Health flips to NOT_SERVING; half a second later (a quarter of ``grace`` at most), every new
        RankingService call is refused with UNAVAILABLE (which clients retry), while the calls taken get up to
        ``grace`` seconds to be answered; then the decision log writes the record of
        every answered call and the queued spans are exported (tracing on, at most
        tracing.FLUSH_SECONDS). ``exiting`` (a ``memrank serve`` process, which ends
        right after): the listeners are left to the process's exit. grpc's own
        shutdown cancels the calls that reached it but were not yet taken, and their
        clients would see CANCELLED (grpc/grpc#41785); closed by the exit, their
        connections fail with UNAVAILABLE instead. In process (tests, embedding), the
        listeners are stopped with ``server.stop``.
        """
        if self.loop.closed:
            return
        deadline = time.monotonic() + grace
        self.loop.run(self.health.enter_graceful_shutdown())
        # Calls sent just before the signal may still be on their way in (grpc hands a busy server its calls a
        # little late): they are taken for a moment more, then every new one is refused.
        time.sleep(min(ACCEPT_AFTER_NOT_SERVING_SECONDS, grace / 4))
        self.intake.start_draining()
        while not self.intake.idle() and time.monotonic() < deadline:
            time.sleep(DRAIN_POLL_SECONDS)
        if not self.intake.idle():
            log.warning("grace period over with calls in flight", extra={"grace_seconds": grace})
        if self.service is not None:
            self.service.close()  # every answered call's decision record is written before the process ends
        if self.tracing is not None:
            self.tracing.shutdown()  # flushed here: a `memrank serve` process ends with os._exit, no atexit
        if exiting:
            return
        self.loop.run(self.server.stop(0))
        if self.health_server is not None:
            self.loop.run(self.health_server.stop(0))
        self.intake.close()
        self.loop.close()
