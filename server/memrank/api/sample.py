"""Which Rank calls are in a share: a deterministic choice by a hash of request_id, the decision log's
(``decision_log.sample_rate``) and the server's shadow's (``shadow.sample_rate``, ``api.shadow``)."""

from __future__ import annotations

import hashlib

_SCALE = float(1 << 64)


def sampled(key: str, rate: float) -> bool:
    """True when the call keyed ``key`` is in the share ``rate`` (logged, or shadowed).

    Logged when the first 8 bytes of SHA-256(key as UTF-8), read as a
    big-endian unsigned integer, are below ``rate`` x 2^64: a caller can
    compute which of its request ids are logged, and the same id is logged
    by every worker and every replica. The key is the request_id (the
    decision id for calls without one).
    """
    if rate >= 1.0:
        return True
    if rate <= 0.0:
        return False
    head = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")
    return head < rate * _SCALE
