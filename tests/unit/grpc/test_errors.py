"""The one status table: every error class to its code; domain errors carry BadRequest + ErrorInfo."""

from __future__ import annotations

import grpc
import pytest
from google.rpc import code_pb2, error_details_pb2

from memrank.core import errors as core
from memrank.grpc import errors

# What the README and the clients document for each error (written out here, not read from the table).
DOCUMENTED = [
    (core.LimitExceeded([core.FieldViolation("candidates", "over 10")]), "INVALID_ARGUMENT"),
    (core.UnknownProfile([core.FieldViolation("profile", "unknown")]), "INVALID_ARGUMENT"),
    (core.InvalidRequest([core.FieldViolation("query", "bad")]), "INVALID_ARGUMENT"),
    (errors.NotEnabled("decision_log.enabled is false"), "FAILED_PRECONDITION"),
    (errors.Overloaded("queue full"), "UNAVAILABLE"),
    (core.ConfigError("a bug: config errors never reach a call"), "INTERNAL"),
    (errors.Unauthenticated("missing or invalid credentials"), "UNAUTHENTICATED"),
    (errors.Draining("shutting down"), "UNAVAILABLE"),
    (errors.ReadTimedOut("not received"), "DEADLINE_EXCEEDED"),
    (errors.NoRequest("no message"), "INVALID_ARGUMENT"),
    (errors.NoRoom("budget"), "RESOURCE_EXHAUSTED"),
    (errors.Abandoned("cancelled"), "CANCELLED"),
    (errors.Internal("bug"), "INTERNAL"),
    (ValueError("anything else"), "INTERNAL"),
]


@pytest.mark.parametrize(("exc", "code"), DOCUMENTED, ids=[type(e).__name__ for e, _ in DOCUMENTED])
def test_each_error_gets_its_documented_code(exc: Exception, code: str) -> None:
    assert errors.code_of(exc).name == code


def test_domain_errors_carry_the_violations_and_the_reason() -> None:
    exc = core.LimitExceeded([core.FieldViolation("candidates", "at most 10"), core.FieldViolation("query", "long")])
    code, status = errors.to_status(exc)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and status.code == code_pb2.INVALID_ARGUMENT
    bad, info = error_details_pb2.BadRequest(), error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(bad) and status.details[1].Unpack(info)
    assert [(v.field, v.description) for v in bad.field_violations] == [("candidates", "at most 10"),
                                                                        ("query", "long")]
    assert (info.reason, info.domain, dict(info.metadata)) == ("LIMIT_EXCEEDED", "memrank.v1",
                                                               {"fields": "candidates,query"})
    assert status.message == "candidates: at most 10; query: long"


class _Context:
    """Records how a call was ended (grpc's abort raises; so does this)."""

    def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise RuntimeError(("plain", code, details))

    def abort_with_status(self, status: grpc.Status) -> None:
        raise RuntimeError(("rich", status.code, status.details))


def test_refusals_go_out_plain_and_domain_errors_rich() -> None:
    with pytest.raises(RuntimeError) as plain:
        errors.abort_with(_Context(), errors.NoRoom("more than 2 calls in progress"))  # type: ignore[arg-type]
    assert plain.value.args[0] == ("plain", grpc.StatusCode.RESOURCE_EXHAUSTED, "more than 2 calls in progress")
    with pytest.raises(RuntimeError) as rich:
        errors.abort_with(_Context(), errors.NotEnabled("decision_log.enabled is false"))  # type: ignore[arg-type]
    assert rich.value.args[0] == ("rich", grpc.StatusCode.FAILED_PRECONDITION, "decision_log.enabled is false")
