"""A minimal HTTP/2 client for frame-level tests: what a hostile, slow or vanished peer sends and sees.

Only what the tests need (RFC 9113): the preface, SETTINGS, HEADERS with literal
HPACK fields, DATA, and reading frames, acknowledging SETTINGS and, unless told
not to, PINGs as a live peer does.
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY = 0x0, 0x1, 0x3, 0x4, 0x6, 0x7
ACK = END_STREAM = 0x1
END_HEADERS = 0x4
MAX_CONCURRENT_STREAMS = 0x3  # a SETTINGS parameter


@dataclass(frozen=True)
class Frame:
    """One frame as read off the wire."""

    type: int
    flags: int
    stream: int
    payload: bytes

    def settings(self) -> dict[int, int]:
        """A SETTINGS frame's parameters."""
        return dict(struct.unpack(">HI", self.payload[i:i + 6]) for i in range(0, len(self.payload), 6))


def _literal(name: str, value: str) -> bytes:
    """A header field as an HPACK literal without indexing, new name, no Huffman (both under 127 bytes)."""
    n, v = name.encode(), value.encode()
    return bytes([0, len(n)]) + n + bytes([len(v)]) + v


class Connection:
    """A plaintext HTTP/2 connection to a loopback port, after the preface and an empty SETTINGS."""

    def __init__(self, port: int, answer_pings: bool = True) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.answer_pings = answer_pings
        self.pings = 0  # PINGs received from the server
        self._buffer = b""
        self.sock.sendall(PREFACE)
        self.send(SETTINGS, 0, 0)

    def send(self, kind: int, flags: int, stream: int, payload: bytes = b"") -> None:
        """Write one frame."""
        self.sock.sendall(struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream)
                          + payload)

    def start_call(self, stream: int, path: str, metadata: tuple[tuple[str, str], ...] = ()) -> None:
        """Send a gRPC call's HEADERS (no END_STREAM: the request is still to come)."""
        fields = [(":method", "POST"), (":scheme", "http"), (":path", path), (":authority", "localhost"),
                  ("content-type", "application/grpc"), ("te", "trailers"), *metadata]
        self.send(HEADERS, END_HEADERS, stream, b"".join(_literal(k, v) for k, v in fields))

    def read(self, timeout: float) -> Frame | None:
        """The next frame within ``timeout`` seconds; None when the server closed the connection.

        Raises TimeoutError when nothing came.
        """
        deadline = time.monotonic() + timeout
        while True:
            if len(self._buffer) >= 9:
                length = int.from_bytes(self._buffer[:3], "big")
                if len(self._buffer) >= 9 + length:
                    head, self._buffer = self._buffer[:9 + length], self._buffer[9 + length:]
                    frame = Frame(head[3], head[4], int.from_bytes(head[5:9], "big") & 0x7FFFFFFF, head[9:])
                    self._answer(frame)
                    return frame
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no frame")
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                return None
            except OSError as exc:  # socket.timeout is a TimeoutError
                raise TimeoutError("no frame") from exc
            if not chunk:
                return None
            self._buffer += chunk

    def read_until(self, kind: int, timeout: float) -> Frame | None:
        """Frames until one of ``kind`` (returned) or the connection closes (None); TimeoutError otherwise."""
        deadline = time.monotonic() + timeout
        while True:
            frame = self.read(max(0.0, deadline - time.monotonic()))
            if frame is None or frame.type == kind:
                return frame

    def closed_within(self, timeout: float) -> bool:
        """True when the server closes the connection within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        try:
            while self.read(max(0.0, deadline - time.monotonic())) is not None:
                pass
        except TimeoutError:
            return False
        return True

    def _answer(self, frame: Frame) -> None:
        if frame.type == SETTINGS and not frame.flags & ACK:
            self.send(SETTINGS, ACK, 0)
        elif frame.type == PING and not frame.flags & ACK:
            self.pings += 1
            if self.answer_pings:
                self.send(PING, ACK, 0, frame.payload)

    def close(self) -> None:
        """Close the socket."""
        self.sock.close()
