"""How a RankingService call gets from the transport to a handler thread.

The server runs on an asyncio event loop (grpc.aio). A call's request message is
read there, so a client that sends its headers and holds the body back costs a
coroutine and its buffer, never a handler thread or a concurrency slot, and the
loop keeps answering health checks. A request that has not fully arrived
``server.request_read_timeout_seconds`` after the call began ends with
DEADLINE_EXCEEDED. Once the request is in, the call takes one of
``server.max_concurrent_rpcs`` slots (none left: RESOURCE_EXHAUSTED at once) and
goes to the handler pool (``server.thread_pool_size`` threads), where it is parsed,
handled and serialised; the slot is given back when that thread is done with it.
Before the slot, the request's bytes are taken from the worker's in-flight byte
budget (``inflight``; ``server.max_inflight_bytes``); when they do not fit, the
call ends with RESOURCE_EXHAUSTED. The call holds them (or its response's size,
when larger) until its response has left, not just until the handler answers: a
client that reads no response fills the budget, and new calls are refused, before
it can fill memory. A response still not sent ``server.response_send_timeout_seconds``
after the handler answered has its connection closed (``cutoff``), counted and
logged. Before that, a connection holding more than
``server.max_unsent_bytes_per_connection`` of responses not yet sent has its new
calls refused with RESOURCE_EXHAUSTED (``inflight.Unsent``), so one client that
stops reading cannot take the whole budget from the others. The slot is not held
meanwhile: a slot bounds handler work, and a few tiny calls that are never read
would otherwise hold all of them for the timeout.
Once the server drains (SIGTERM), every new call is refused with UNAVAILABLE,
which clients retry, while the calls already on the pool finish.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent import futures
from typing import TYPE_CHECKING, Any

import grpc

from memrank.grpc.cutoff import SendWatch
from memrank.grpc.errors import Draining, NoRequest, NoRoom, ReadTimedOut, Refusal, code_of, refuse
from memrank.grpc.inflight import ByteBudget, Hold, Unsent

if TYPE_CHECKING:
    from memrank.grpc.tracing import Tracing

log = logging.getLogger("memrank.rpc")
DRAINING = "the server is shutting down (draining); retry: another replica, or this one restarted, will answer"


class Aborted(Exception):
    """A handler thread's abort, carried to the event loop, which sends the status."""

    def __init__(self, code: grpc.StatusCode, details: str, trailing_metadata: Sequence[tuple[str, Any]] = ()):
        super().__init__(details)
        self.code = code
        self.details = details
        self.trailing_metadata = tuple(trailing_metadata)


class CallContext:
    """What a handler uses of grpc.ServicerContext, for a call run on the handler pool."""

    def __init__(self, metadata: Sequence[tuple[str, Any]], time_remaining: float | None) -> None:
        self._metadata = tuple(metadata)
        self._deadline = None if time_remaining is None else time.monotonic() + time_remaining
        # True once the loop is done with the call (cancelled, deadline, server stop): a flag the handler thread
        # reads, not an Event (nothing waits on it; an Event is a lock and a condition made and set per call).
        self.ended = False

    def is_active(self) -> bool:
        """False once the client cancelled, its deadline passed or the server ended the call."""
        return not self.ended and (self._deadline is None or time.monotonic() < self._deadline)

    def time_remaining(self) -> float | None:
        """Seconds until the client's deadline (None: no deadline)."""
        return None if self._deadline is None else max(0.0, self._deadline - time.monotonic())

    def invocation_metadata(self) -> tuple[tuple[str, Any], ...]:
        """The call's request metadata."""
        return self._metadata

    def abort(self, code: grpc.StatusCode, details: str = "") -> None:
        """End the call with this status (raises)."""
        raise Aborted(code, details)

    def abort_with_status(self, status: grpc.Status) -> None:
        """End the call with this status and its trailing metadata (raises)."""
        raise Aborted(status.code, status.details, status.trailing_metadata)


def core_ended_code(context: grpc.aio.ServicerContext) -> str:
    """The status grpc's core ended a call with before its request message reached memrank.

    grpc.aio hands the handler no message and no reason (its read gives EOF; a status sent then fails), so the
    code is inferred: DEADLINE_EXCEEDED when the call's deadline had passed, else RESOURCE_EXHAUSTED, core's
    answer to a message over ``server.max_message_bytes``, the one limit memrank leaves to core. Core's rarer
    endings look the same from here and are counted under it too: a compressed message core cannot read
    (INTERNAL to its client) and a client resetting its stream before its message was in (CANCELLED).
    """
    remaining = context.time_remaining()
    late = remaining is not None and remaining <= 0
    return (grpc.StatusCode.DEADLINE_EXCEEDED if late else grpc.StatusCode.RESOURCE_EXHAUSTED).name


# A handler takes the request bytes out of a one-item list (so nothing else keeps them once parsed) and the call.
Handle = Callable[[list[bytes], CallContext], bytes]


class Intake:
    """The read and send timeouts, the concurrency slots and the handler pool of one server."""

    def __init__(self, threads: int, max_concurrent: int, read_timeout: float,
                 observe: Callable[[str, str], None] | None = None, budget: ByteBudget | None = None,
                 tracing: Tracing | None = None, send_timeout: float = 10.0,
                 observe_send_timeout: Callable[[str], None] | None = None, unsent: Unsent | None = None) -> None:
        self._pool = futures.ThreadPoolExecutor(max_workers=threads, thread_name_prefix="memrank-rpc")
        self._slots = threading.BoundedSemaphore(max_concurrent)
        self._max = max_concurrent
        self._read_timeout = read_timeout
        self._observe = observe or (lambda _method, _code: None)
        self.budget = budget if budget is not None else ByteBudget(1 << 62)
        self.draining = False  # set by start_draining: every new call is refused with UNAVAILABLE
        self._active = 0  # calls taken whose status is not yet sent
        self._active_lock = threading.Lock()
        self.tracing = tracing  # on: each call in a server span, its handler run in the call's context
        self._send_watch = SendWatch(send_timeout, observe_send_timeout or (lambda _method: None))
        self.unsent = unsent if unsent is not None else Unsent(1 << 62)

    def method_handler(self, method: str, handle: Handle) -> grpc.RpcMethodHandler:
        """A handler for a unary method: its request is read here, then ``handle`` runs on the pool.

        Registered as request-streaming so that grpc hands the call over before the
        message arrives (for a unary handler it would wait for it, without a limit).
        """
        async def serve(_requests: Any, context: grpc.aio.ServicerContext) -> bytes:
            with self._active_lock:
                taken = not self.draining
                if taken:  # counted until grpc has sent its status (the done callback), not just until we return
                    self._active += 1
            if not taken:
                await self._refuse(method, context, Draining(DRAINING))
            context.add_done_callback(self._finished)
            peer = context.peer()
            if self.unsent.refuses(peer, method):  # before its request is read: it would only wait, in memory
                await self._refuse(method, context, NoRoom(
                    f"this connection has {self.unsent.held(peer)} bytes of responses not yet sent to it, over "
                    f"server.max_unsent_bytes_per_connection ({self.unsent.cap}): read the responses of calls in "
                    "progress, or retry later"))
            # The request bytes live only in the list the handler empties: freed once parsed.
            return await self._run(method, handle, [await self._read(method, context)], context, peer)

        return grpc.stream_unary_rpc_method_handler(serve if self.tracing is None
                                                    else self.tracing.server(method, serve))

    async def _refuse(self, method: str, context: grpc.aio.ServicerContext, exc: Refusal) -> None:
        """Count the refused call under its code, then end it (raises)."""
        self._observe(method, code_of(exc).name)
        await refuse(context, exc)

    def start_draining(self) -> None:
        """From now on every new call is refused with UNAVAILABLE; the calls already taken go on."""
        with self._active_lock:
            self.draining = True

    def idle(self) -> bool:
        """True when every call taken has been answered (its status sent)."""
        with self._active_lock:
            return self._active == 0

    def _finished(self, _context: object) -> None:
        with self._active_lock:
            self._active -= 1

    def close(self) -> None:
        """Stop the pool once the calls on it are done."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    @staticmethod
    async def _messages(context: grpc.aio.ServicerContext) -> tuple[Any, bool]:
        """The request message, and whether another followed it before the client's half-close."""
        data = await context.read()
        return data, data is not grpc.aio.EOF and await context.read() is not grpc.aio.EOF

    async def _read(self, method: str, context: grpc.aio.ServicerContext) -> bytes:
        try:  # a unary request has arrived when the client half-closes: both within the read timeout
            async with asyncio.timeout(self._read_timeout):  # no task of its own per call, unlike wait_for
                data, more = await self._messages(context)
        except TimeoutError:
            log.info("rpc cut off: request not received in time",
                     extra={"method": method, "seconds": self._read_timeout})
            await self._refuse(method, context, ReadTimedOut(
                f"request not received within {self._read_timeout:g} s (server.request_read_timeout_seconds)"))
        if data is grpc.aio.EOF:  # no message, or grpc's core ended the call before one reached memrank
            await self._refuse_messageless(method, context)
        if more:
            log.info("rpc refused: more than one request message", extra={"method": method})
            await self._refuse(method, context, NoRequest(f"{method} takes one request message, got more"))
        return bytes(data)

    async def _refuse_messageless(self, method: str, context: grpc.aio.ServicerContext) -> None:
        """A call that reached memrank without a message: refused (INVALID_ARGUMENT) and counted so, unless grpc's
        core had already ended it with its own status; then counted under that status (``core_ended_code``)."""
        refusal = NoRequest(f"{method} takes one request message, got none")
        try:
            await refuse(context, refusal)
        except grpc.aio.AbortError:  # memrank's status went out
            self._observe(method, code_of(refusal).name)
            raise
        except BaseException:  # it could not: the call was over (grpc.aio's ExecuteBatchError, or cancelled)
            self._observe(method, core_ended_code(context))
            raise

    async def _take_bytes(self, method: str, size: int, context: grpc.aio.ServicerContext) -> None:
        """Take the request's bytes from the in-flight byte budget, or refuse the call with RESOURCE_EXHAUSTED."""
        if not self.budget.take(size):
            total, used = self.budget.total, self.budget.used
            await self._refuse(method, context, NoRoom(
                f"request of {size} bytes does not fit the in-flight byte budget ({used} of {total} bytes taken "
                "by calls in progress, server.max_inflight_bytes); retry later"))

    async def _run(self, method: str, handle: Handle, data: list[bytes], context: grpc.aio.ServicerContext,
                   peer: str) -> bytes:
        size = len(data[0])
        await self._take_bytes(method, size, context)
        if not self._slots.acquire(blocking=False):
            self.budget.release(size)
            await self._refuse(method, context,
                               NoRoom(f"more than {self._max} calls in progress (server.max_concurrent_rpcs)"))
        call = CallContext(context.invocation_metadata() or (), context.time_remaining())
        try:
            job = self._pool.submit(handle, data, call) if self.tracing is None else \
                self._pool.submit(contextvars.copy_context().run, handle, data, call)  # the server span is current
        except RuntimeError:  # the pool is shut down: the server is stopping
            self._slots.release()
            self.budget.release(size)
            await self._refuse(method, context, Draining(DRAINING))
        hold = Hold(self.budget, size)  # given back once the thread is done and the RPC has ended
        context.add_done_callback(hold.call_done)  # added from the RPC's own task: it cannot have ended yet

        def done(_job: object) -> None:  # when the thread is done, not the call
            self._slots.release()
            hold.thread_done()

        job.add_done_callback(done)
        try:
            response = await asyncio.wrap_future(job)
        except Aborted as stop:
            await context.abort(stop.code, stop.details, stop.trailing_metadata)
        finally:
            call.ended = True  # a thread still working on a call that is over stops at its next stage
        hold.grow(len(response))
        context.add_done_callback(self.unsent.add(peer, len(response)))  # uncounted once it has left
        self._send_watch.watch(method, context)
        return response
