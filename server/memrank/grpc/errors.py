"""The one place core errors become gRPC statuses (AIP-193: BadRequest + ErrorInfo)."""

from __future__ import annotations

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from memrank.core.errors import InvalidRequest, LimitExceeded, MemrankError, NotEnabled, Overloaded, UnknownProfile

DOMAIN = "memrank.v1"

# Domain error -> (gRPC code, google.rpc code). Most specific first.
STATUS_TABLE: tuple[tuple[type[MemrankError], grpc.StatusCode, int], ...] = (
    (LimitExceeded, grpc.StatusCode.INVALID_ARGUMENT, code_pb2.INVALID_ARGUMENT),
    (UnknownProfile, grpc.StatusCode.INVALID_ARGUMENT, code_pb2.INVALID_ARGUMENT),
    (InvalidRequest, grpc.StatusCode.INVALID_ARGUMENT, code_pb2.INVALID_ARGUMENT),
    (NotEnabled, grpc.StatusCode.FAILED_PRECONDITION, code_pb2.FAILED_PRECONDITION),
    (Overloaded, grpc.StatusCode.UNAVAILABLE, code_pb2.UNAVAILABLE),
)


def _pack(message: object) -> any_pb2.Any:
    detail = any_pb2.Any()
    detail.Pack(message)
    return detail


def to_status(exc: MemrankError) -> tuple[grpc.StatusCode, status_pb2.Status]:
    """The gRPC code and rich status for a domain error."""
    code, rpc_code = next(
        ((c, r) for cls, c, r in STATUS_TABLE if isinstance(exc, cls)), (grpc.StatusCode.INTERNAL, code_pb2.INTERNAL)
    )
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


def abort_with(context: grpc.ServicerContext, exc: MemrankError) -> None:
    """Abort the call with the status for exc (raises)."""
    _, status = to_status(exc)
    context.abort_with_status(rpc_status.to_status(status))
