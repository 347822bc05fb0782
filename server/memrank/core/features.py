"""What a memory's own text decides, looked up rather than recomputed when the runtime lends a store.

Three rules read nothing but a memory's kind and content: ``statement`` (a closing question mark),
``safety.injections`` (the injection patterns) and the category rules of ``importance`` (as if the caller sent no
importance). The runtime may pass a ``FeatureStore`` (``pipeline.rank``'s ``features``; why and how large:
docs/operations/sizing.md): each memory's three results, packed in one int, under a digest of everything they
depend on::

    key = XXH3-128(content as UTF-8, seed = BLAKE2b-64(RULES_VERSION || kind || 0x00, key = the store's salt)
                                            as a little-endian integer)

One C hash call per memory over its content (the seed is worked out once per distinct kind and call): an eighth
of the BLAKE2b-128 of the whole text that keyed it before (0.59 against 4.18 M instructions for 400 memories of
~250 characters). The salt is random per process, so a caller cannot aim two contents at one key (XXH3 is no
cryptographic hash). Each result is a function of the key's inputs alone, so no response depends on what an
earlier call stored (tests/unit/core/test_features.py). Change any of the three rules and bump
``RULES_VERSION``: old entries then miss.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from xxhash import xxh3_128_digest

from memrank.core.batch import Batch
from memrank.core.signals import importance, safety, statement
from memrank.core.signals.base import OWN_FEATURES

RULES_VERSION = b"memrank.features.2\0"
_STATEMENT, _INJECTION, _IMPORTANCE = 0, 1, 4  # bit offsets of the packed fields


class FeatureStore(Protocol):
    """What the core asks of a store (``memrank.feature_memo.FeatureMemo``): values by key, and new values, under
    keys salted with its ``salt``."""

    @property
    def salt(self) -> bytes: ...

    def lookup(self, keys: Sequence[bytes]) -> list[int | None]: ...

    def store(self, keys: Sequence[bytes], values: Sequence[int]) -> None: ...


@dataclass(frozen=True)
class MemoryFeatures:
    """Per memory (int64 columns): ``statement`` 0 question / 1 statement; ``injection`` the index of the first
    matching ``safety.INJECTION_PATTERNS`` entry, -1 none; ``importance`` the code of ``importance.rule_codes``
    as if the caller gave no importance."""

    statement: np.ndarray
    injection: np.ndarray
    importance: np.ndarray


def seed(kind: str, salt: bytes) -> int:
    """The XXH3 seed of a kind's memories: what of a key is not the content (module docstring)."""
    tag = hashlib.blake2b(b"%s%s\0" % (RULES_VERSION, kind.encode("utf-8", "surrogatepass")), digest_size=8,
                          key=salt).digest()
    return int.from_bytes(tag, "little")


def keys(batch: Batch, salt: bytes) -> list[bytes]:
    """Each memory's digest of what its features depend on (module docstring)."""
    seeds = {kind: seed(kind, salt) for kind in set(batch.kinds)}
    try:
        texts = list(map(str.encode, batch.contents))
    except UnicodeEncodeError:  # a lone surrogate (no protobuf string holds one; the in-process API may)
        texts = [c.encode("utf-8", "surrogatepass") for c in batch.contents]
    return list(map(xxh3_128_digest, texts, map(seeds.__getitem__, batch.kinds)))


def _computed(batch: Batch) -> np.ndarray:
    """Every memory's features by the rules themselves, packed (one int64 each)."""
    everyone = np.ones(batch.n, dtype=bool)
    names = list(safety.INJECTION_PATTERNS)
    injection = np.full(batch.n, -1, dtype=np.int64)
    for i, name in safety.injections(batch, everyone).items():
        injection[i] = names.index(name)
    return (np.asarray(statement.codes(batch.contents), dtype=np.int64) << _STATEMENT | (injection + 1) << _INJECTION
            | importance.rule_codes(batch, everyone) << _IMPORTANCE)


def _unpacked(packed: np.ndarray) -> MemoryFeatures:
    def field(at: int, bits: int | None) -> np.ndarray:
        shifted = packed >> at
        return shifted if bits is None else shifted & ((1 << bits) - 1)

    return MemoryFeatures(statement=field(_STATEMENT, 1), injection=field(_INJECTION, 3) - 1,
                          importance=field(_IMPORTANCE, None))


def memory_features(batch: Batch, store: FeatureStore) -> MemoryFeatures:
    """The batch's features: the store's where it holds them, the others computed and stored (once per batch)."""
    def build() -> MemoryFeatures:
        digests = keys(batch, store.salt)
        found = store.lookup(digests)
        missed = [i for i, v in enumerate(found) if v is None]
        packed = np.fromiter((0 if v is None else v for v in found), dtype=np.int64, count=batch.n)
        if missed:
            fresh = _computed(batch if len(missed) == batch.n else batch.take(missed))
            packed[missed] = fresh
            store.store([digests[i] for i in missed], fresh.tolist())
        return _unpacked(packed)

    features: MemoryFeatures = batch.memo.get(OWN_FEATURES, build)
    return features
