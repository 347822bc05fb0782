"""Receipts: a SHA-256 digest over a canonical serialisation of an answer, optionally HMAC-signed.

Canonical form (UTF-8, each line ending in "\\n"; ``f(x)`` is the 16 hex
digits of the IEEE-754 big-endian float64 bits of x, ``q(s)`` is the JSON
string literal of s with ASCII escapes)::

    schema memrank.receipt.v1
    reference_time <seconds> <nanos>
    profile q(profile)
    policy_version q(policy_version)
    weights <count>
    weight q(signal) f(weight)                       one per weight, response order
    memories <count>
    memory <rank> q(id) <sha256(content) hex> f(score) f(combined) f(final) f(blend_term)
    signal q(name) f(raw) f(normalized) f(weight) f(contribution)   per signal, after its memory

Memories are the selected ones in rank order. Digest = SHA-256 hex of the
bytes; signature = HMAC-SHA256(receipt key, digest hex) hex, or "".
"""

from __future__ import annotations

import hashlib
import hmac
import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass

SCHEMA = "memrank.receipt.v1"


@dataclass(frozen=True)
class ReceiptMemory:
    """What a receipt binds about one returned memory."""

    rank: int
    id: str
    content: str
    score: float
    combined: float
    final: float
    blend_term: float
    signals: Sequence[tuple[str, float, float, float, float]]  # name, raw, normalized, weight, contribution


def _f(x: float) -> str:
    return struct.pack(">d", x).hex()


def _q(s: str) -> str:
    return json.dumps(s, ensure_ascii=True)


def canonical(ref_seconds: int, ref_nanos: int, profile: str, policy_version: str,
              weights: Sequence[tuple[str, float]], memories: Sequence[ReceiptMemory]) -> bytes:
    """The canonical serialisation described in the module docstring."""
    lines = [f"schema {SCHEMA}", f"reference_time {ref_seconds} {ref_nanos}", f"profile {_q(profile)}",
             f"policy_version {_q(policy_version)}", f"weights {len(weights)}"]
    lines += [f"weight {_q(name)} {_f(w)}" for name, w in weights]
    lines.append(f"memories {len(memories)}")
    for m in memories:
        digest = hashlib.sha256(m.content.encode()).hexdigest()
        lines.append(f"memory {m.rank} {_q(m.id)} {digest} {_f(m.score)} {_f(m.combined)} {_f(m.final)} "
                     f"{_f(m.blend_term)}")
        lines += [f"signal {_q(n)} {_f(r)} {_f(z)} {_f(w)} {_f(c)}" for n, r, z, w, c in m.signals]
    return ("\n".join(lines) + "\n").encode()


def seal(payload: bytes, key: bytes | None) -> tuple[str, str]:
    """(digest hex, signature hex or "") of a canonical payload."""
    digest = hashlib.sha256(payload).hexdigest()
    signature = hmac.new(key, digest.encode(), hashlib.sha256).hexdigest() if key else ""
    return digest, signature
