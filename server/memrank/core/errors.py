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
    """The configuration is invalid; the message names the key and the value.

    In the core because a profile is core data: ``Profile`` and the signal registry refuse a bad value (an
    unknown signal, formula or fusion) at construction, whoever builds it. The runtime's refusals (a feature
    left off, a full queue) are ``memrank.grpc.errors``'."""

    reason = "CONFIG_ERROR"
