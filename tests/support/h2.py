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
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE = 0x0, 0x1, 0x3, 0x4, 0x6, 0x7, 0x8
ACK = END_STREAM = 0x1
END_HEADERS = 0x4
MAX_CONCURRENT_STREAMS, INITIAL_WINDOW_SIZE = 0x3, 0x4  # SETTINGS parameters
DEFAULT_WINDOW = 65_535  # RFC 9113: a connection's and a stream's window before any SETTINGS or WINDOW_UPDATE
MAX_FRAME = 16_384  # the smallest SETTINGS_MAX_FRAME_SIZE a peer may announce


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

    def __init__(self, port: int, answer_pings: bool = True, receive_window: int | None = None) -> None:
        """``receive_window``: the SETTINGS_INITIAL_WINDOW_SIZE announced (0: the server may send no DATA on any
        stream, as a client that never reads its responses); None announces nothing (65,535)."""
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.answer_pings = answer_pings
        self.pings = 0  # PINGs received from the server
        self._buffer = b""
        # What the server lets this client send (its SETTINGS and WINDOW_UPDATEs), to send DATA within it.
        self._send_window = DEFAULT_WINDOW
        self._stream_initial = DEFAULT_WINDOW
        self._stream_windows: dict[int, int] = {}
        self.sock.sendall(PREFACE)
        self.send(SETTINGS, 0, 0, b"" if receive_window is None else struct.pack(">HI", INITIAL_WINDOW_SIZE,
                                                                                  receive_window))

    def send(self, kind: int, flags: int, stream: int, payload: bytes = b"") -> None:
        """Write one frame."""
        self.sock.sendall(struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream)
                          + payload)

    def start_call(self, stream: int, path: str, metadata: tuple[tuple[str, str], ...] = ()) -> None:
        """Send a gRPC call's HEADERS (no END_STREAM: the request is still to come)."""
        fields = [(":method", "POST"), (":scheme", "http"), (":path", path), (":authority", "localhost"),
                  ("content-type", "application/grpc"), ("te", "trailers"), *metadata]
        self.send(HEADERS, END_HEADERS, stream, b"".join(_literal(k, v) for k, v in fields))

    def send_message(self, stream: int, message: bytes, timeout: float = 10) -> None:
        """Send a gRPC message (length-prefixed) and half-close, in DATA frames within the server's windows."""
        body = b"\x00" + len(message).to_bytes(4, "big") + message
        deadline = time.monotonic() + timeout
        while body:
            room = min(self._send_window, self._stream_windows.setdefault(stream, self._stream_initial), MAX_FRAME)
            if room <= 0:  # wait for a WINDOW_UPDATE (read() applies it)
                self.read(max(0.0, deadline - time.monotonic()))
                continue
            chunk, body = body[:room], body[room:]
            self._send_window -= len(chunk)
            self._stream_windows[stream] -= len(chunk)
            self.send(DATA, 0 if body else END_STREAM, stream, chunk)

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

    def answered(self, stream: int, timeout: float) -> bool:
        """True when the server answered ``stream`` without ending it (its response headers, which no window holds
        back, came: the response itself may be waiting for a window); False when it ended the stream (a refusal)
        or closed the connection. Raises TimeoutError when neither happened within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            frame = self.read(max(0.0, deadline - time.monotonic()))
            if frame is None or (frame.stream == stream and frame.type == RST_STREAM):
                return False
            if frame.stream == stream and frame.type == HEADERS:
                return not frame.flags & END_STREAM

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
            initial = frame.settings().get(INITIAL_WINDOW_SIZE)
            if initial is not None:  # applies to every open stream, by the difference (RFC 9113 6.9.2)
                self._stream_windows = {k: v + initial - self._stream_initial for k, v in self._stream_windows.items()}
                self._stream_initial = initial
            self.send(SETTINGS, ACK, 0)
        elif frame.type == WINDOW_UPDATE:
            grant = int.from_bytes(frame.payload[:4], "big") & 0x7FFFFFFF
            if frame.stream == 0:
                self._send_window += grant
            else:
                window = self._stream_windows.get(frame.stream, self._stream_initial)
                self._stream_windows[frame.stream] = window + grant
        elif frame.type == PING and not frame.flags & ACK:
            self.pings += 1
            if self.answer_pings:
                self.send(PING, ACK, 0, frame.payload)

    def close(self) -> None:
        """Close the socket."""
        self.sock.close()
