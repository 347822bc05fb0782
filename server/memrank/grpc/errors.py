"""The one place that decides a call's gRPC status: one table from error class to code.

Two kinds of error end a call. The core's ``MemrankError`` tree (a bad field, an unknown profile, a feature
left off, an overloaded queue) goes out with the rich status of AIP-193: BadRequest field violations plus an
ErrorInfo. The transport's refusals (``Refusal`` below: no or bad credentials, a draining server, a request
that did not arrive in time or does not fit, a cancelled call, an internal failure) are decided before or
around the handler and go out as a code and a message. Every module that ends a call raises or passes one of
these; none names a status code itself (metrics label a call with the code's name, taken from here or from
``grpc.StatusCode`` for the endings grpc decides).
"""

from __future__ import annotations

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from memrank.core.errors import InvalidRequest, LimitExceeded, MemrankError, UnknownProfile

DOMAIN = "memrank.v1"


# The runtime's domain errors: rich statuses like the core's, raised by the servicer, never by the core.
class NotEnabled(MemrankError):
    """The call needs a feature the server's configuration leaves off (the message names the key)."""

    reason = "NOT_ENABLED"


class Overloaded(MemrankError):
    """The server cannot take this call now; the same call may succeed when retried."""

    reason = "OVERLOADED"


class Refusal(Exception):
    """A call the transport ends; the class decides the code, the message is what the client reads."""


class Unauthenticated(Refusal):
    """No accepted bearer token for a method that needs one."""


class Draining(Refusal):
    """The server is shutting down: another replica, or this one restarted, will answer."""


class ReadTimedOut(Refusal):
    """The request message did not arrive within the read timeout."""


class NoRequest(Refusal):
    """A unary method got no request message."""


class NoMethod(Refusal):
    """A method no service of this server has."""


class NoRoom(Refusal):
    """The call does not fit now (the byte budget or the concurrency slots); a retry later may."""


class Abandoned(Refusal):
    """The client cancelled the call or its deadline passed while it ran."""


class Internal(Refusal):
    """A bug: the handler raised something memrank did not raise on purpose (logged with its traceback)."""


# Error class -> (gRPC code, google.rpc code). Most specific first; anything else is INTERNAL.
STATUS_TABLE: tuple[tuple[type[Exception], grpc.StatusCode, int], ...] = (
    (LimitExceeded, grpc.StatusCode.INVALID_ARGUMENT, code_pb2.INVALID_ARGUMENT),
    (UnknownProfile, grpc.StatusCode.INVALID_ARGUMENT, code_pb2.INVALID_ARGUMENT),
    (InvalidRequest, grpc.StatusCode.INVALID_ARGUMENT, code_pb2.INVALID_ARGUMENT),
    (NotEnabled, grpc.StatusCode.FAILED_PRECONDITION, code_pb2.FAILED_PRECONDITION),
    (Overloaded, grpc.StatusCode.UNAVAILABLE, code_pb2.UNAVAILABLE),
    (Unauthenticated, grpc.StatusCode.UNAUTHENTICATED, code_pb2.UNAUTHENTICATED),
    (Draining, grpc.StatusCode.UNAVAILABLE, code_pb2.UNAVAILABLE),
    (ReadTimedOut, grpc.StatusCode.DEADLINE_EXCEEDED, code_pb2.DEADLINE_EXCEEDED),
    (NoRequest, grpc.StatusCode.INVALID_ARGUMENT, code_pb2.INVALID_ARGUMENT),
    (NoRoom, grpc.StatusCode.RESOURCE_EXHAUSTED, code_pb2.RESOURCE_EXHAUSTED),
    (NoMethod, grpc.StatusCode.UNIMPLEMENTED, code_pb2.UNIMPLEMENTED),
    (Abandoned, grpc.StatusCode.CANCELLED, code_pb2.CANCELLED),
    (Internal, grpc.StatusCode.INTERNAL, code_pb2.INTERNAL),
)


def _codes(exc: Exception) -> tuple[grpc.StatusCode, int]:
    return next(((c, r) for cls, c, r in STATUS_TABLE if isinstance(exc, cls)),
                (grpc.StatusCode.INTERNAL, code_pb2.INTERNAL))


def code_of(exc: Exception) -> grpc.StatusCode:
    """The gRPC code the table gives an error."""
    return _codes(exc)[0]


def _pack(message: object) -> any_pb2.Any:
    detail = any_pb2.Any()
    detail.Pack(message)
    return detail


def to_status(exc: MemrankError) -> tuple[grpc.StatusCode, status_pb2.Status]:
    """The gRPC code and rich status for a domain error."""
    code, rpc_code = _codes(exc)
    details = []
    if isinstance(exc, InvalidRequest):
        bad = error_details_pb2.BadRequest(field_violations=[
            error_details_pb2.BadRequest.FieldViolation(field=v.field, description=v.description)
            for v in exc.violations
        ])
        details.append(_pack(bad))
        fields = ",".join(v.field for v in exc.violations[:5])
    else:
        fields = ""
    details.append(_pack(error_details_pb2.ErrorInfo(reason=exc.reason, domain=DOMAIN,
                                                     metadata={"fields": fields} if fields else {})))
    return code, status_pb2.Status(code=rpc_code, message=str(exc)[:1000], details=details)


def abort_with(context: grpc.ServicerContext, exc: MemrankError | Refusal) -> None:
    """End the call with the status the table gives exc (raises): rich for domain errors."""
    if isinstance(exc, MemrankError):
        context.abort_with_status(rpc_status.to_status(to_status(exc)[1]))
    context.abort(code_of(exc), str(exc))


async def refuse(context: grpc.aio.ServicerContext, exc: Refusal) -> None:
    """End an asyncio call with the refusal's status (raises)."""
    await context.abort(code_of(exc), str(exc))
