"""Which Rank calls are in a share: a deterministic choice by a hash of request_id, the decision log's
(``decision_log.sample_rate``) and the server's shadow's (``shadow.sample_rate``, ``api.shadow``)."""

from __future__ import annotations

import hashlib

_SCALE = float(1 << 64)


def sampled(key: str, rate: float) -> bool:
    """True when the first 8 bytes of SHA-256(``key``), big-endian, are below ``rate`` x 2^64: a caller can compute
    which of its request ids are in the share, and every worker and replica agrees
    (docs/how-to/decision-log-and-tuning.md)."""
    if rate >= 1.0:
        return True
    if rate <= 0.0:
        return False
    head = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")
    return head < rate * _SCALE
