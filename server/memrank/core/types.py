"""Domain enums of the scoring core.

Values mirror the ``memrank.v1`` proto enums one for one (a unit test checks
that), so the transport converts by integer value without a lookup table.
"""

from __future__ import annotations

from enum import IntEnum


class Source(IntEnum):
    """Who stated a memory."""

    UNSPECIFIED = 0
    SYSTEM_VERIFIED = 1
    TRUSTED_SOURCE = 2
    USER_PROVIDED = 3
    CHAT = 4
    IMPORTED = 5
    UNKNOWN = 6
    UNTRUSTED = 7
    MODEL_INFERRED = 8


class Safety(IntEnum):
    """Moderation state of a memory."""

    UNSPECIFIED = 0
    SAFE = 1
    REVIEW_NEEDED = 2
    UNSAFE = 3
    QUARANTINED = 4
    PENDING = 5


class DropReason(IntEnum):
    """Why a candidate was not selected (0 = kept)."""

    KEPT = 0
    BELOW_THRESHOLD = 1
    ZERO_IMPORTANCE = 2
    SAFETY_GATED = 3
    FUTURE_EVENT = 4
    NOT_YET_VALID = 5
    EXPIRED = 6
    REDUNDANT = 7
    OVER_BUDGET = 8
    MAX_ITEMS = 9
    BELOW_MIN_SCORE = 10


class Placement(IntEnum):
    """Where the best memory sits in the returned block."""

    UNSPECIFIED = 0
    BEST_FIRST = 1
    BEST_LAST = 2
    EDGES = 3


class ExplainLevel(IntEnum):
    """How much explanation a response carries."""

    UNSPECIFIED = 0
    FULL = 1
    SELECTED = 2
    NONE = 3


class AdmissionDecision(IntEnum):
    """Outcome of an admission check."""

    UNSPECIFIED = 0
    ADMIT = 1
    HOLD = 2
    REJECT = 3
