"""The /metrics HTTP endpoint on its own port."""

from __future__ import annotations

import logging
from threading import Thread
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server

from memrank.system.ports import bind_error, display

log = logging.getLogger("memrank.metrics")


def serve_metrics(address: str, port: int, registry: CollectorRegistry) -> tuple[WSGIServer, Thread] | None:
    """Start the exposition server (port 0 = off); returns it so it can be shut down. A port that cannot be
    bound raises ConfigError naming server.metrics_port (AddressInUse when another process holds it)."""
    if port == 0:
        log.info("metrics endpoint disabled (metrics_port = 0)")
        return None
    try:
        server, thread = start_http_server(port, addr=address, registry=registry)
    except OSError as exc:
        raise bind_error("server.metrics_port", display(address, port), exc) from None
    log.info("metrics on http://%s:%d/metrics", address, server.server_port)
    return server, thread
