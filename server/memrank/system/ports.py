"""The listening ports, checked before anything serves: a port another process holds is refused, naming its key.

Workers share ``server.address`` (and ``server.health_address``) through SO_REUSEPORT, and Linux lets
any SO_REUSEPORT socket of the same user join such a group: a second ``memrank serve`` would bind the
same port and the two would split the traffic. So, before any worker starts, ``claim`` does for each
address the supervisor's workers will share:

1. **Probe**: bind and listen a socket WITHOUT SO_REUSEPORT (with SO_REUSEADDR, as grpc binds, so the
   previous run's connections in TIME_WAIT do not count). EADDRINUSE means another process holds the
   port: a listener of any kind (another memrank, of any worker count), or a socket bound without
   SO_REUSEADDR. Listening, two probes of two starting servers exclude each other.
2. **Hold**: close the probe and at once bind a socket WITH SO_REUSEPORT and without SO_REUSEADDR,
   never listening (it is handed no connection), kept until the supervisor ends. Its workers join it
   (same user, SO_REUSEPORT); another server's probe, a plain bind or a ``--workers 1`` server fails
   on it, from the check on and while a worker restarts.

A single server (``--workers 1``) binds without SO_REUSEPORT, so the kernel itself refuses to share its
port: ``check_free`` only probes, to say "in use" before grpc logs its own error.

Residual (documented in the README): a process of the same user binding with SO_REUSEPORT in the
microseconds between a probe's close and the hold's bind joins the port (two memrank supervisors would
have to both pass their probes and close them within those microseconds). When connections of a
previous server that did not use SO_REUSEPORT are still in TIME_WAIT, the hold cannot bind without
SO_REUSEADDR; it then takes it, and another server's probe is refused only once the workers listen
(about a second later). Both are Linux semantics; a process of another user can never join.
"""

from __future__ import annotations

import errno
import socket
from typing import Any

from memrank.core.errors import ConfigError


class AddressInUse(ConfigError):
    """Another process holds a port memrank is configured to listen on (``key``: the setting naming it)."""

    def __init__(self, message: str, key: str = "") -> None:
        super().__init__(message)
        self.key = key


def host_port(address: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port``) split; the host without brackets."""
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


def display(host: str, port: int) -> str:
    """``host:port``, with brackets around an IPv6 host."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def bind_error(key: str, address: str, exc: OSError) -> ConfigError:
    """The error naming ``key`` for a failed bind of ``address``."""
    if exc.errno == errno.EADDRINUSE:
        return AddressInUse(f"{key} {address} is in use (another process holds the port)", key)
    if exc.errno == errno.EADDRNOTAVAIL:
        return ConfigError(f"{key} {address} is not a local address")
    return ConfigError(f"{key} {address}: cannot bind: {exc.strerror or exc}")


def _sockaddrs(key: str, address: str) -> list[tuple[int, tuple[Any, ...]]]:
    host, port = host_port(address)
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ConfigError(f"{key} {address} is not a local address ({exc.strerror})") from None
    out: list[tuple[int, tuple[Any, ...]]] = []
    for family, _, _, _, sockaddr in infos:
        item = (int(family), tuple(sockaddr))
        if item not in out:
            out.append(item)
    return out


def _socket(family: int, reuse_address: bool, reuse_port: bool) -> socket.socket | None:
    try:
        sock = socket.socket(family, socket.SOCK_STREAM)
    except OSError:  # e.g. IPv6 off: grpc skips that family too
        return None
    if reuse_address:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    return sock


def _probe(key: str, address: str, family: int, sockaddr: tuple[Any, ...]) -> None:
    probe = _socket(family, reuse_address=True, reuse_port=False)
    if probe is None:
        return
    with probe:
        try:
            probe.bind(sockaddr)
            probe.listen(1)
        except OSError as exc:
            raise bind_error(key, address, exc) from None


def check_free(key: str, address: str) -> None:
    """Raise AddressInUse (naming ``key``) when another process holds ``address``; port 0 is always free."""
    if host_port(address)[1] == 0:
        return
    for family, sockaddr in _sockaddrs(key, address):
        _probe(key, address, family, sockaddr)


def claim(key: str, address: str) -> list[socket.socket]:
    """Probe ``address``, then hold it for this process's SO_REUSEPORT workers (see the module's text);
    the caller closes the returned sockets when its workers are gone."""
    holds: list[socket.socket] = []
    try:
        for family, sockaddr in _sockaddrs(key, address):
            _probe(key, address, family, sockaddr)
            holds.extend(_hold(key, address, family, sockaddr))
    except BaseException:
        release(holds)
        raise
    return holds


def _hold(key: str, address: str, family: int, sockaddr: tuple[Any, ...]) -> list[socket.socket]:
    for reuse_address in (False, True):  # True: a previous non-SO_REUSEPORT server's TIME_WAIT is in the way
        sock = _socket(family, reuse_address=reuse_address, reuse_port=True)
        if sock is None:
            return []
        try:
            sock.bind(sockaddr)
            return [sock]
        except OSError as exc:
            sock.close()
            if exc.errno != errno.EADDRINUSE or reuse_address:
                raise bind_error(key, address, exc) from None
    return []


def release(holds: list[socket.socket]) -> None:
    """Close what ``claim`` returned."""
    for sock in holds:
        sock.close()
