"""How content and query text appear in a record: omitted, HMAC-hashed, or (on request) plain."""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from typing import Any

OMIT, HASH, PLAIN = "omit", "hash", "plain"


class Masker:
    """Turns texts into their logged form under one ``decision_log.content`` mode.

    ``omit``: length in characters only. ``hash``: also HMAC-SHA256(key, UTF-8
    text) in hex, so equal texts can be matched across records while a guess
    cannot be checked without the key. ``plain``: also the text itself.
    """

    def __init__(self, mode: str, key: bytes | None = None) -> None:
        if mode == HASH and not key:
            raise ValueError("decision_log.content hash needs a key")
        self.mode = mode
        self._key = key

    def one(self, text: str) -> dict[str, Any]:
        """The logged form of one text (the query)."""
        out: dict[str, Any] = {"length": len(text)}
        if self.mode == HASH:
            out["hmac"] = self._hmac(text)
        elif self.mode == PLAIN:
            out["text"] = text
        return out

    def many(self, texts: Sequence[str]) -> dict[str, list[str]]:
        """Columns added for a batch of texts (the candidates' content): {} , {"content_hmac"} or {"content"}."""
        if self.mode == HASH:
            return {"content_hmac": [self._hmac(t) for t in texts]}
        if self.mode == PLAIN:
            return {"content": list(texts)}
        return {}

    def _hmac(self, text: str) -> str:
        assert self._key is not None
        return hmac.digest(self._key, text.encode(), "sha256").hex()
