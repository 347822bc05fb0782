"""The /metrics HTTP endpoint on its own port: a thread per scrape, a listen queue for 128 of them at once,
and one rendering at a time shared by the scrapes that wait for it, at most RENDER_SHARE of the time.

100 scrapers at once (issue #41, item 8): with Python's listen queue of 5 the others' SYNs were dropped and
retried after 1, 3, 7 s (scrape p99 21-29 s); with a longer queue each rendered the registry in a thread of
its own, and those threads took the GIL from the Rank calls of the same process (1 worker, 400 candidates:
Rank p99 78 -> 1,106 ms). Shared and paced, a scrape still gets numbers rendered after it arrived.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

from memrank.system.ports import bind_error, display

log = logging.getLogger("memrank.metrics")
LISTEN_BACKLOG = 128  # connections the kernel queues for accept (socketserver's default: 5)
RENDER_SHARE = 0.2  # a rendering starts no sooner than 4 of its own durations after the last one started
_KEYS = ("REQUEST_METHOD", "PATH_INFO", "QUERY_STRING", "HTTP_ACCEPT", "HTTP_ACCEPT_ENCODING")  # what it reads
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


@dataclass(frozen=True)
class _Rendered:
    key: tuple[str, ...]
    started: float
    took: float
    status: str
    headers: list[tuple[str, str]]
    body: bytes


class SharedRender:
    """A WSGI app rendering through ``app`` one scrape at a time; a scrape served by a rendering that started
    after it arrived (same method, path, query and Accept headers) shares it instead of rendering again."""

    def __init__(self, app: WsgiApp) -> None:
        self._app = app
        self._lock = threading.Lock()
        self._last: _Rendered | None = None

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        arrived = time.monotonic()
        key = tuple(str(environ.get(k, "")) for k in _KEYS)
        with self._lock:
            last = self._last
            if last is None or last.key != key or last.started < arrived:
                if last is not None:
                    time.sleep(max(0.0, last.started + last.took / RENDER_SHARE - time.monotonic()))
                last = self._last = self._render(environ, key)
        start_response(last.status, last.headers)
        return [last.body]

    def _render(self, environ: dict[str, Any], key: tuple[str, ...]) -> _Rendered:
        started = time.monotonic()
        head: list[Any] = []
        body = b"".join(self._app(environ, lambda status, headers, *_: head.extend((status, headers))))
        return _Rendered(key, started, time.monotonic() - started, head[0], list(head[1]), body)


class _Handler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Log nothing per scrape."""


def _server_class(address: str, port: int) -> tuple[type[WSGIServer], str]:
    """A thread-per-scrape server class of the address's family (IPv6 too), with the longer listen queue."""
    family, *_, sockaddr = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]

    class MetricsServer(ThreadingWSGIServer):  # daemon threads: a scrape never holds the process up
        address_family = family
        request_queue_size = LISTEN_BACKLOG

    return MetricsServer, str(sockaddr[0])


def serve_metrics(address: str, port: int, registry: CollectorRegistry) -> tuple[WSGIServer, threading.Thread] | None:
    """Start the exposition server (port 0 = off); returns it so it can be shut down. A port that cannot be
    bound raises ConfigError naming server.metrics_port (AddressInUse when another process holds it)."""
    if port == 0:
        log.info("metrics endpoint disabled (metrics_port = 0)")
        return None
    try:
        server_class, host = _server_class(address, port)
        server = make_server(host, port, SharedRender(make_wsgi_app(registry)), server_class,
                             handler_class=_Handler)
    except OSError as exc:
        raise bind_error("server.metrics_port", display(address, port), exc) from None
    thread = threading.Thread(target=server.serve_forever, name="memrank-metrics", daemon=True)
    thread.start()
    log.info("metrics on http://%s:%d/metrics", address, server.server_port)
    return server, thread
