"""What a memory's own text decides, looked up rather than recomputed when the runtime lends a store.

Three rules read nothing but a memory's kind and content: ``statement`` (a closing question mark),
``safety.injections`` (the injection patterns) and the category rules of ``importance`` (as if the caller sent no
importance). An agent ranks the same memories again and again (replaying a LoCoMo conversation's questions in
order, 98.8 % of the candidates of a question were sent by an earlier one), so the runtime may pass a
``FeatureStore`` (``ScoringContext.features``): each memory's three results, packed in one int, under a digest of
everything they depend on::

    key = BLAKE2b-128(RULES_VERSION || kind || 0x00 || content as UTF-8)

A memory found there is a lookup; the others are computed as a batch of their own by the same rules and stored.
Each result is a function of the key's inputs alone, so no response depends on what an earlier call stored
(tests/unit/core/test_features.py replays calls cold, warm and without a store, byte for byte). Change any of
the three rules and bump ``RULES_VERSION``: old entries then miss.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from memrank.core.batch import Batch

RULES_VERSION = b"memrank.features.1\0"
_STATEMENT, _INJECTION, _HOW, _RULE, _DETAIL = 0, 1, 4, 7, 10  # bit offsets of the packed fields


class FeatureStore(Protocol):
    """What the core asks of a store (``memrank.feature_memo.FeatureMemo``): values by key, and new values."""

    def lookup(self, keys: Sequence[bytes]) -> list[int | None]: ...

    def store(self, keys: Sequence[bytes], values: Sequence[int]) -> None: ...


@dataclass(frozen=True)
class MemoryFeatures:
    """Per memory (int64 columns): ``statement`` 0 question / 1 statement; ``injection`` the index of the first
    matching ``safety.INJECTION_PATTERNS`` entry, -1 none; ``rule``, ``how``, ``detail`` the importance codes of
    ``importance.rule_codes`` as if the caller gave no importance."""

    statement: np.ndarray
    injection: np.ndarray
    rule: np.ndarray
    how: np.ndarray
    detail: np.ndarray


def keys(batch: Batch) -> list[bytes]:
    """Each memory's digest of what its features depend on (module docstring)."""
    blake = hashlib.blake2b
    return [blake(b"%s%s\0%s" % (RULES_VERSION, k.encode("utf-8", "surrogatepass"),
                                 c.encode("utf-8", "surrogatepass")), digest_size=16).digest()
            for k, c in zip(batch.kinds, batch.contents, strict=True)]


def _computed(batch: Batch) -> np.ndarray:
    """Every memory's features by the rules themselves, packed (one int64 each)."""
    from memrank.core.signals import importance, safety, statement  # they read this module: imported on a miss

    everyone = np.ones(batch.n, dtype=bool)
    names = list(safety.INJECTION_PATTERNS)
    injection = np.full(batch.n, -1, dtype=np.int64)
    for i, name in safety.injections(batch, everyone).items():
        injection[i] = names.index(name)
    rule, how, detail = importance.rule_codes(batch, everyone)
    return (np.asarray(statement.codes(batch.contents), dtype=np.int64) << _STATEMENT | (injection + 1) << _INJECTION
            | how << _HOW | (rule + 1) << _RULE | (detail + 1) << _DETAIL)


def _unpacked(packed: np.ndarray) -> MemoryFeatures:
    def field(at: int, bits: int | None) -> np.ndarray:
        shifted = packed >> at
        return shifted if bits is None else shifted & ((1 << bits) - 1)

    return MemoryFeatures(statement=field(_STATEMENT, 1), injection=field(_INJECTION, 3) - 1, how=field(_HOW, 3),
                          rule=field(_RULE, 3) - 1, detail=field(_DETAIL, None) - 1)


def memory_features(batch: Batch, store: FeatureStore) -> MemoryFeatures:
    """The batch's features: the store's where it holds them, the others computed and stored (once per batch)."""
    def build() -> MemoryFeatures:
        digests = keys(batch)
        found = store.lookup(digests)
        missed = [i for i, v in enumerate(found) if v is None]
        packed = np.fromiter((0 if v is None else v for v in found), dtype=np.int64, count=batch.n)
        if missed:
            fresh = _computed(batch if len(missed) == batch.n else batch.take(missed))
            packed[missed] = fresh
            store.store([digests[i] for i in missed], fresh.tolist())
        return _unpacked(packed)

    features: MemoryFeatures = batch.memo.get("memory features", build)
    return features
