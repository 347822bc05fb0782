"""The one error tree of memrank's core; the transport maps it to status codes."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FieldViolation:
    """One bad field: its path (``candidates[3].retrieval_score``) and the rule it broke."""

    field: str
    description: str


class MemrankError(Exception):
    """Base of every error memrank raises on purpose."""

    reason = "MEMRANK_ERROR"


class InvalidRequest(MemrankError):
    """The request breaks a validation rule; carries every violation found."""

    reason = "INVALID_REQUEST"

    def __init__(self, violations: list[FieldViolation]) -> None:
        self.violations = tuple(violations)
        super().__init__("; ".join(f"{v.field}: {v.description}" for v in violations))


class LimitExceeded(InvalidRequest):
    """The request is over a configured limit (the violation names the limit)."""

    reason = "LIMIT_EXCEEDED"


class UnknownProfile(InvalidRequest):
    """The request names a profile that is not configured."""

    reason = "UNKNOWN_PROFILE"


class ConfigError(MemrankError):
    """The configuration is invalid; the message names the key and the value."""

    reason = "CONFIG_ERROR"


class NotEnabled(MemrankError):
    """The call needs a feature the server's configuration leaves off (the message names the key)."""

    reason = "NOT_ENABLED"


class Overloaded(MemrankError):
    """The server cannot take this call now; the same call may succeed when retried."""

    reason = "OVERLOADED"
