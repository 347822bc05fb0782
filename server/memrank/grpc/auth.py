"""Optional bearer-token authentication: a server interceptor over a token file reloaded on change.

Refusals are ``UNAUTHENTICATED`` with one fixed message: they never say whether
a token was missing, malformed or unknown, and never echo it. Open services
(health and reflection by default) answer without a token.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import grpc

from memrank.core.errors import ConfigError
from memrank.grpc.errors import Unauthenticated, code_of, refuse
from memrank.grpc.tls import _stamp

log = logging.getLogger("memrank.auth")
REFUSAL = "missing or invalid credentials"
_SCHEME = "bearer "


def parse_tokens(text: str) -> frozenset[bytes]:
    """SHA-256 digests of the tokens in a file's text: one per line, blank lines and # comments skipped."""
    lines = (line.strip() for line in text.splitlines())
    return frozenset(hashlib.sha256(t.encode()).digest() for t in lines if t and not t.startswith("#"))


class TokenFile:
    """The accepted tokens, re-read when the file changes (checked at most every ``interval`` seconds)."""

    def __init__(self, path: str, interval: float = 1.0, clock: Callable[[], float] | None = None) -> None:
        self._path = path
        self._interval = interval
        self._clock = clock or time.monotonic
        self._lock = threading.Lock()
        self._checked = self._clock()
        self._seen = _stamp((path,))
        self._digests = self._load()
        if not self._digests:
            raise ConfigError(f"security.auth_token_file: {path!r} holds no token")

    def _load(self) -> frozenset[bytes]:
        try:
            return parse_tokens(Path(self._path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"security.auth_token_file: cannot read {self._path!r}: {exc}") from None

    def _refresh(self) -> None:
        now = self._clock()
        if now - self._checked < self._interval:
            return
        with self._lock:
            self._checked = now
            stamp = _stamp((self._path,))
            if stamp == self._seen:
                return
            try:
                digests = self._load()
            except ConfigError:
                log.warning("auth token file changed but cannot be read; keeping the previous tokens")
                return
            self._seen = stamp
            if not digests:
                log.warning("auth token file changed to hold no token; keeping the previous tokens")
                return
            self._digests = digests
            log.info("auth tokens reloaded", extra={"tokens": len(digests)})

    def accepts(self, token: str) -> bool:
        """True when token is one of the file's tokens (compared as digests, in constant time each)."""
        self._refresh()
        digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
        found = False
        for known in self._digests:
            found |= hmac.compare_digest(known, digest)
        return found


def open_matcher(spec: str) -> Callable[[str], bool]:
    """Whether a full method name ("/pkg.Service/Method") is open, from the comma-separated setting."""
    entries = {e.strip() for e in spec.split(",") if e.strip()}
    methods = {e for e in entries if e.startswith("/")}
    services = entries - methods

    def is_open(method: str) -> bool:
        parts = method.split("/")
        return method in methods or (len(parts) == 3 and parts[1] in services)

    return is_open


def _bearer(metadata: Iterable[tuple[str, Any]] | None) -> str | None:
    for key, value in metadata or ():
        if key == "authorization" and isinstance(value, str) and value[:len(_SCHEME)].lower() == _SCHEME:
            return value[len(_SCHEME):].strip()
    return None


async def _refuse(_requests: object, context: grpc.aio.ServicerContext) -> None:
    await refuse(context, Unauthenticated(REFUSAL))


# Request-streaming, whatever the method: grpc hands the call over at once, and the refusal is
# sent without waiting for (or reading) the request, taking no concurrency slot and no thread.
_REFUSAL = grpc.stream_unary_rpc_method_handler(_refuse)


class BearerAuthInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]  # grpc ships no types
    """Lets a call through when its ``authorization: Bearer <token>`` is accepted or its method is open.

    It runs on the event loop as each call arrives, before the request is read.
    """

    def __init__(self, tokens: TokenFile, is_open: Callable[[str], bool],
                 observe: Callable[[str, str], None] | None = None) -> None:
        self._tokens = tokens
        self._is_open = is_open
        self._observe = observe or (lambda _method, _code: None)  # counts each refusal: (full method, code)

    async def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        """Continue, or refuse with UNAUTHENTICATED (unknown methods too: they reveal nothing)."""
        method = handler_call_details.method
        if self._is_open(method):
            return await continuation(handler_call_details)
        token = _bearer(handler_call_details.invocation_metadata)
        if token and self._tokens.accepts(token):
            return await continuation(handler_call_details)
        log.info("rpc unauthenticated", extra={"method": method[:200], "token_present": token is not None})
        self._observe(method, code_of(Unauthenticated()).name)
        return _REFUSAL
