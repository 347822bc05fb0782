"""Provenance proofs for the privileged sources (SYSTEM_VERIFIED, TRUSTED_SOURCE).

A proof is the lower-case hex HMAC-SHA256, under the configured provenance
key, of this canonical message, encoded as UTF-8::

    "memrank-provenance-v1\\n" + id + "\\n" + str(source) + "\\n" + sha256_hex(content_utf8)

``source`` is the integer value of the ``memrank.v1.Source`` enum (e.g. "1"
for SOURCE_SYSTEM_VERIFIED) and ``sha256_hex`` is the lower-case hex SHA-256
of the full content. The message parses unambiguously from the right (the
digest has a fixed length and the source has no newline), so an id holding
newlines cannot forge another candidate's message; the prefix keeps these
proofs apart from any other use of the key. A proof binds one id, one source
level and one exact content: replaying it for other content, another id or a
higher level fails.
"""

from __future__ import annotations

import hashlib
import hmac

PREFIX = "memrank-provenance-v1"


def canonical_message(id: str, source: int, content: str) -> bytes:
    """The bytes a provenance proof signs."""
    content_digest = hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{PREFIX}\n{id}\n{int(source)}\n{content_digest}".encode("utf-8", "surrogatepass")


def provenance_digest(key: bytes, id: str, source: int, content: str) -> str:
    """Lower-case hex HMAC-SHA256 of the canonical message under key."""
    return hmac.new(key, canonical_message(id, source, content), hashlib.sha256).hexdigest()


def verify(key: bytes | None, id: str, source: int, content: str, proof: str) -> bool:
    """True when proof is the valid digest (constant-time compare); False without a key or proof."""
    if not key or not proof:
        return False
    expected = provenance_digest(key, id, source, content)
    # Bytes, not str: compare_digest refuses non-ASCII str, and a proof is caller input.
    return hmac.compare_digest(expected.encode(), proof.strip().lower().encode("utf-8", "surrogatepass"))
