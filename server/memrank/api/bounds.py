"""The wire format's fixed bounds (the configurable ones are ``limits.*`` in config), shared by the per-field
rules (``validate``, ``candidate_rules``)."""

from __future__ import annotations

import math
from typing import Any

# Timestamp's documented range: 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59Z.
MIN_SECONDS, MAX_SECONDS = -62_135_596_800, 253_402_300_799
TIME_RANGE = "timestamp outside 0001-01-01..9999-12-31 or nanos outside [0, 999999999]"
MAX_FACET_ABS = 1e6
MAX_REQUEST_ID_BYTES = 128
MAX_LAYER_NAME_BYTES = 128
MAX_NAME_BYTES = 128  # a facet, stage or weight-override name, a profile name
MAX_WEIGHT_OVERRIDES = 64
SHOWN_CHARS = 40  # a name echoed in an error is cut here: a hostile name is not sent back whole
MAX_POSITION = 2**53  # the largest integer float64 (the Batch column) holds exactly with all below it
MAX_VIOLATIONS = 20  # a hostile request does not get a megabyte of error details
UNIT = (0.0, 1.0)  # retrieval_score's range, except under the Go scorer's formula:
ANY = (-math.inf, math.inf)  # any finite value (scoreMemory multiplies any float64 by 0.30)


def in_time_range(seconds: Any, nanos: Any) -> Any:
    """Whether a Timestamp's seconds and nanos (ints, or int64 arrays: element-wise) are in its documented range."""
    return (seconds >= MIN_SECONDS) & (seconds <= MAX_SECONDS) & (nanos >= 0) & (nanos <= 999_999_999)


def too_long(texts: list[str], limit: int) -> list[int]:
    """The rows of ``texts`` over ``limit`` UTF-8 bytes. A character is at most 4 bytes: only the texts of more
    than limit / 4 characters are encoded (none when the longest is not)."""
    if max(map(len, texts), default=0) * 4 <= limit:
        return []
    return [i for i, t in enumerate(texts) if len(t) * 4 > limit and len(t.encode()) > limit]
