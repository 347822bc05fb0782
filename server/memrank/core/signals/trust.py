"""Trust from the memory's source, with proof required for the privileged levels.

system_verified 1.0, trusted_source 0.9, user_provided 0.75, chat 0.65,
imported 0.6, model_inferred 0.55 (an inference is weaker than what the user
said), unknown and unset 0.5, untrusted 0.25. The two privileged levels count
only with a valid provenance proof (``core.signals.provenance``) under
``ctx.provenance_key``; without one they count as unknown (0.5) and the
reasons say why. Caller metadata never changes trust.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from memrank.core.batch import Batch
from memrank.core.profile import Profile
from memrank.core.signals import provenance
from memrank.core.signals.base import RawSignal, ScoringContext
from memrank.core.types import Source

TRUST: Mapping[Source, float] = MappingProxyType({
    Source.UNSPECIFIED: 0.5,
    Source.SYSTEM_VERIFIED: 1.0,
    Source.TRUSTED_SOURCE: 0.9,
    Source.USER_PROVIDED: 0.75,
    Source.CHAT: 0.65,
    Source.IMPORTED: 0.6,
    Source.UNKNOWN: 0.5,
    Source.UNTRUSTED: 0.25,
    Source.MODEL_INFERRED: 0.55,
})
UNKNOWN_TRUST = TRUST[Source.UNKNOWN]
PRIVILEGED = frozenset({Source.SYSTEM_VERIFIED, Source.TRUSTED_SOURCE})
_TABLE = np.array([TRUST[Source(i)] for i in range(len(Source))], dtype=np.float64)


def _name(source: int) -> str:
    try:
        return Source(source).name.lower()
    except ValueError:
        return f"source {source}"


def _privileged(batch: Batch, ctx: ScoringContext, i: int, source: int) -> tuple[float, str]:
    if not ctx.provenance_key:
        return UNKNOWN_TRUST, f"{_name(source)} claimed, no provenance key configured: counted as unknown"
    if not batch.provenance[i]:
        return UNKNOWN_TRUST, f"{_name(source)} claimed without provenance: counted as unknown"
    if not provenance.verify(ctx.provenance_key, batch.ids[i], source, batch.contents[i], batch.provenance[i]):
        return UNKNOWN_TRUST, f"{_name(source)} claimed, provenance invalid: counted as unknown"
    return TRUST[Source(source)], f"{_name(source)} with valid provenance"


def trust(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """Table trust per source; privileged levels need valid provenance."""
    src = batch.source.astype(np.int64)
    known = (src >= 0) & (src < _TABLE.shape[0])
    values = np.where(known, _TABLE[np.where(known, src, 0)], UNKNOWN_TRUST)
    reasons: list[tuple[str, ...]] = []
    listed, table = src.tolist(), values.tolist()
    plain = {s: (f"source {_name(s)}: {v:g}",) for s, v in set(zip(listed, table, strict=True))}  # once a source
    for i, s in enumerate(listed):
        if s in PRIVILEGED:
            values[i], why = _privileged(batch, ctx, i, s)
            reasons.append((why,))
        else:
            reasons.append(plain[s])
    return RawSignal(values, tuple(reasons))
