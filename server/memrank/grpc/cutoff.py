"""Closing the connection of a call whose response does not leave in time: the one way grpc.aio leaves to free it.

A unary response is handed to grpc's core with the call's status in one batch; a client that grants no
HTTP/2 window (or stops reading its socket while answering pings) keeps that batch pending, with the response
in core's buffers, for as long as the connection lives: keepalive sees a live peer and the connection's age
limit comes after minutes. grpc.aio has no server-side cancel of one call (its ServicerContext exposes none,
and an abort queues its status behind the stuck message). What it does notice is its socket failing: so the
socket whose peer is the call's is shut down (a duplicate of core's descriptor; core still owns and closes
its own), core closes the transport, every call on it ends (CANCELLED or UNAVAILABLE to the client) and their
memory is freed. The calls on it that were sending are cancelled first: grpc.aio would log each failed send
as an error with its traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import stat
from collections.abc import Callable
from typing import Any

import grpc

log = logging.getLogger("memrank.rpc")


def peer_address(peer: str) -> tuple[str, int] | None:
    """(host, port) of a grpc peer string ("ipv4:127.0.0.1:5000", "ipv6:[::1]:5000"); None for other kinds."""
    kind, _, address = peer.partition(":")
    if kind not in ("ipv4", "ipv6"):
        return None
    host, _, port = address.rpartition(":")
    return (host.strip("[]"), int(port)) if port.isdigit() else None


def _socket_peer(fd: int) -> tuple[str, int] | None:
    """The remote (host, port) of descriptor ``fd`` when it is a connected TCP socket."""
    try:
        if not stat.S_ISSOCK(os.fstat(fd).st_mode):
            return None
        with socket.socket(fileno=os.dup(fd)) as sock:
            if sock.family not in (socket.AF_INET, socket.AF_INET6):
                return None
            host, port = sock.getpeername()[:2]
    except OSError:  # closed meanwhile, or not connected
        return None
    return str(host).removeprefix("::ffff:"), int(port)  # an IPv4 peer on a dual-stack listener


def cut(peer: str) -> bool:
    """Shut down this process's TCP connection to ``peer`` (a grpc peer string); False when none is found."""
    address = peer_address(peer)
    if address is None:
        return False
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if _socket_peer(fd) == address:
            with contextlib.suppress(OSError), socket.socket(fileno=os.dup(fd)) as sock:
                sock.shutdown(socket.SHUT_RDWR)
                return True
    return False


class SendWatch:
    """The calls whose response is on its way out, by connection (the event loop's only): a response not gone
    ``timeout`` seconds after its handler answered ends with its connection, counted once (``observe``)."""

    def __init__(self, timeout: float, observe: Callable[[str], None]) -> None:
        self.timeout = timeout
        self._observe = observe
        self._sending: dict[str, set[asyncio.Task[Any]]] = {}  # by peer: the RPC tasks sending a response

    def watch(self, method: str, context: grpc.aio.ServicerContext) -> None:
        """Watch the call whose handler has just answered, from its own task (grpc.aio sends the response in it)."""
        task = asyncio.current_task()
        if task is None:
            return
        peer = context.peer()
        calls = self._sending.setdefault(peer, set())
        calls.add(task)
        timer = asyncio.get_running_loop().call_later(self.timeout, self._expire, method, peer)

        def left(_context: object) -> None:  # the RPC ended: its response left, or the call was cancelled
            timer.cancel()
            calls.discard(task)
            if not calls and self._sending.get(peer) is calls:
                del self._sending[peer]

        context.add_done_callback(left)

    def _expire(self, method: str, peer: str) -> None:
        calls = self._sending.pop(peer, None)
        if not calls:  # ended by another call's timeout on the same connection, due at the same moment
            return
        self._observe(method)
        if not cut(peer):  # not a TCP connection of this process: left to server.max_connection_age_seconds
            self._sending[peer] = calls  # still held, their bytes too
            log.warning("rpc response not sent in time, and its connection cannot be closed (not TCP)",
                        extra={"method": method, "peer": peer, "seconds": self.timeout})
            return
        for task in calls:  # ended now as cancelled calls, not as failed sends (their own timers stop with them)
            task.cancel()
        log.warning("rpc connection closed: a response not sent in time (the client does not read)",
                    extra={"method": method, "peer": peer, "seconds": self.timeout})
