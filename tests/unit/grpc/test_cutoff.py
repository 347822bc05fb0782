"""Closing a connection by its grpc peer string: the address parsed, the socket found in this process and shut
down (its owner then reads end-of-file), nothing touched for a peer that is not a TCP connection of ours."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from memrank.grpc.cutoff import cut, peer_address


def test_peer_strings_give_their_address() -> None:
    assert peer_address("ipv4:127.0.0.1:5000") == ("127.0.0.1", 5000)
    assert peer_address("ipv6:[::1]:5000") == ("::1", 5000)
    assert peer_address("unix:/tmp/memrank.sock") is None  # no address to find the socket by
    assert peer_address("ipv4:127.0.0.1") is None


@pytest.fixture()
def connection() -> Iterator[tuple[socket.socket, socket.socket]]:
    """(the accepted socket, the client's), on loopback."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        accepted, _ = listener.accept()
    with accepted, client:
        yield accepted, client


def test_the_socket_whose_peer_is_named_is_shut_down(connection: tuple[socket.socket, socket.socket]) -> None:
    accepted, client = connection
    host, port = client.getsockname()
    assert cut(f"ipv4:{host}:{port}")
    accepted.settimeout(2)
    assert accepted.recv(1) == b""  # its owner sees the connection end
    client.settimeout(2)
    assert client.recv(1) == b""  # and so does the peer


def test_a_peer_without_a_socket_here_is_left_alone(connection: tuple[socket.socket, socket.socket]) -> None:
    accepted, client = connection
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        free_port = unused.getsockname()[1]
    assert not cut(f"ipv4:127.0.0.1:{free_port}")
    assert not cut("unix:/tmp/memrank.sock")
    client.sendall(b"x")
    accepted.settimeout(2)
    assert accepted.recv(1) == b"x"  # still open
