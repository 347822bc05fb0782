"""What a server says about itself: the address a client calls, the "ready" line, the /metrics URL."""

from __future__ import annotations

import logging
from typing import Any

from memrank.config import ServerSettings, Settings
from memrank.system import ports

log = logging.getLogger("memrank.server")


def call_address(address: str, port: int) -> str:
    """The host:port a client on this machine calls: a wildcard host (0.0.0.0, ::) becomes the loopback."""
    host = ports.host_port(address)[0]
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return ports.display(host, port)


def log_ready(settings: Settings, port: int, health_port: int = 0) -> None:
    """The "ready" line: the server answers now, at this address, and how to try it."""
    s, sec = settings.server, settings.security
    target = call_address(s.address, port)
    fields: dict[str, Any] = {"address": target, "port": port, "workers": s.workers,
                              "tls": bool(sec.tls_cert_file), "auth": bool(sec.auth_token_file),
                              "metrics": metrics_url(s)}
    if s.health_address:
        fields["health_address"] = call_address(s.health_address, health_port or ports.host_port(s.health_address)[1])
    if not sec.tls_cert_file and not sec.auth_token_file:
        fields["try"] = f"grpcurl -plaintext {target} list"
    log.info(f"ready: grpc on {target}", extra=fields)


def metrics_url(s: ServerSettings) -> str:
    """Where /metrics is served, or "off"."""
    return f"http://{ports.display(s.metrics_host, s.metrics_port)}/metrics" if s.metrics_port else "off"
