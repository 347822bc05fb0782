"""The wire format's fixed bounds (the configurable ones are ``limits.*`` in config), shared by the per-field
rules (``validate``, ``candidate_rules``)."""

from __future__ import annotations

import math

# Timestamp's documented range: 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59Z.
MIN_SECONDS, MAX_SECONDS = -62_135_596_800, 253_402_300_799
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


def utf8_within(texts: list[str], limit: int) -> bool:
    """Every text is at most ``limit`` UTF-8 bytes.

    A character is at most 4 bytes, so when the longest text has at most limit / 4 characters
    nothing is encoded; otherwise only the texts that could be over are.
    """
    if max(map(len, texts), default=0) * 4 <= limit:
        return True
    return all(len(t) * 4 <= limit or len(t.encode()) <= limit for t in texts)
