"""A failed call as the Python clients raise it: ``RankingError`` (code, message, field violations, ErrorInfo reason)
and a subclass per code a caller handles apart."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import grpc
import grpc.aio
from google.rpc import error_details_pb2, status_pb2

_DETAILS_KEY = "grpc-status-details-bin"
# grpc core's refusal of a message over a channel's or server's limit, e.g.
# "CLIENT: Sent message larger than max (70026307 vs. 67108864)": it names neither setting.
_TOO_LARGE = re.compile(r"(SERVER|CLIENT): (Sent|Received) message larger than max \((\d+) vs\. (\d+)\)")
_SERVER_LIMIT = "the server's server.max_message_bytes (MEMRANK_MAX_MESSAGE_BYTES)"


@dataclass(frozen=True)
class FieldError:
    """One field violation reported by the server."""

    field: str
    description: str


def _decode_details(trailing_metadata: Iterable[tuple[str, str | bytes]] | None) -> tuple[list[FieldError], str]:
    """The google.rpc.BadRequest violations and the google.rpc.ErrorInfo reason in grpc-status-details-bin."""
    violations: list[FieldError] = []
    reason = ""
    for key, value in trailing_metadata or ():
        if key != _DETAILS_KEY or not isinstance(value, bytes):
            continue
        for detail in status_pb2.Status.FromString(value).details:
            if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                bad = error_details_pb2.BadRequest()
                detail.Unpack(bad)
                violations.extend(FieldError(v.field, v.description) for v in bad.field_violations)
            elif detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo()
                detail.Unpack(info)
                reason = info.reason
    return violations, reason


class RankingError(Exception):
    """A failed call: the gRPC code, the message and any BadRequest field violations and ErrorInfo reason.

    A RankingError is made as the subclass of its code: ``InvalidArgument``, ``Unavailable``,
    ``Unauthenticated`` or ``ResourceExhausted`` (``RankingError(grpc.StatusCode.UNAVAILABLE, ...)`` is an
    ``Unavailable``); other codes stay plain RankingErrors. ``except RankingError`` catches them all.
    """

    CODE: ClassVar[grpc.StatusCode | None] = None  # the code of a subclass

    def __new__(cls, code: grpc.StatusCode, message: str = "", violations: Sequence[FieldError] = (),
                reason: str = "") -> RankingError:
        if cls is RankingError:
            cls = _BY_CODE.get(code, RankingError)
        return super().__new__(cls)

    def __init__(self, code: grpc.StatusCode, message: str = "", violations: Sequence[FieldError] = (),
                 reason: str = "") -> None:
        self.code = code
        self.message = message
        self.violations = tuple(violations)
        self.reason = reason
        fields = "; ".join(f"{v.field}: {v.description}" for v in self.violations)
        super().__init__(f"{code.name}: {message}" + (f" [{fields}]" if fields and fields not in message else ""))

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.code, self.message, self.violations, self.reason), self.__dict__

    def renamed(self, rename: Callable[[str], str]) -> RankingError:
        """The same error with ``rename`` applied to its message and each violation's field and description."""
        return RankingError(self.code, rename(self.message),
                            [FieldError(rename(v.field), rename(v.description)) for v in self.violations], self.reason)

    @property
    def fields(self) -> tuple[str, ...]:
        """The violated field paths."""
        return tuple(v.field for v in self.violations)

    @classmethod
    def from_rpc_error(cls, err: grpc.RpcError) -> RankingError:
        """Decode a grpc.RpcError (blocking or grpc.aio), including google.rpc.BadRequest and ErrorInfo details."""
        code = err.code() if hasattr(err, "code") else grpc.StatusCode.UNKNOWN
        details = err.details() if hasattr(err, "details") else str(err)
        violations, reason = _decode_details(err.trailing_metadata() if hasattr(err, "trailing_metadata") else None)
        if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
            details = _explain_size_limit(details or "")
        return RankingError(code, details or "", violations, reason)


def _explain_size_limit(details: str) -> str:
    """grpc's "message larger than max" said as which limit it is and the setting that raises it (other
    details as they are); grpc's own words follow in brackets."""
    found = _TOO_LARGE.search(details)
    if found is None:
        return details
    side, way, size, limit = found.groups()
    if side == "SERVER":
        said = (f"the request is {size} bytes, over {_SERVER_LIMIT}, {limit} bytes: send fewer or smaller "
                "candidates, or raise that setting on the server")
    elif way == "Sent":
        said = (f"the request is {size} bytes, over this client's max_message_bytes, {limit} bytes: send fewer or "
                f"smaller candidates, or raise max_message_bytes (RankingClient(max_message_bytes=...)) and "
                f"{_SERVER_LIMIT} with it")
    else:
        said = (f"the response is {size} bytes, over this client's max_message_bytes, {limit} bytes: raise it "
                "(RankingClient(max_message_bytes=...))")
    return f"{said} [grpc: {details}]"


class InvalidArgument(RankingError):
    """INVALID_ARGUMENT: the request was refused; ``violations`` / ``fields`` name what is wrong."""

    CODE = grpc.StatusCode.INVALID_ARGUMENT


class Unavailable(RankingError):
    """UNAVAILABLE: no server answered (or it was draining), after every retry the service config allows."""

    CODE = grpc.StatusCode.UNAVAILABLE


class Unauthenticated(RankingError):
    """UNAUTHENTICATED: the server wants a bearer token (``token=``) and got none, or another."""

    CODE = grpc.StatusCode.UNAUTHENTICATED


class ResourceExhausted(RankingError):
    """RESOURCE_EXHAUSTED: the server is at a limit (in-flight bytes, message size); try later or send less."""

    CODE = grpc.StatusCode.RESOURCE_EXHAUSTED


_BY_CODE: dict[grpc.StatusCode, type[RankingError]] = {
    c.CODE: c for c in (InvalidArgument, Unavailable, Unauthenticated, ResourceExhausted) if c.CODE is not None}
