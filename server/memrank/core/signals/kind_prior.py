"""Kind prior: a table lookup on the memory's kind, case-sensitive, 0 for kinds not listed.

The table is ``profile.kind_prior``; the default (the Go scorer's) is
decision 0.35, fact 0.30, preference 0.25, failure 0.20, attempt 0.05.
"""

from __future__ import annotations

import numpy as np

from memrank.core.batch import Batch
from memrank.core.profile import Profile
from memrank.core.signals.base import RawSignal, ScoringContext


def kind_prior(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """profile.kind_prior[kind], 0 when the kind is not in the table."""
    table = profile.kind_prior
    # Value and reason once per distinct kind (a batch has few), then looked up per candidate.
    prior = {k: float(table.get(k, 0.0)) for k in set(batch.kinds)}
    why = {k: (f"kind {k!r}: {v:g}",) if k in table else (f"kind {k!r} not in the prior table: 0",)
           for k, v in prior.items()}
    values = np.array([prior[k] for k in batch.kinds], dtype=np.float64).reshape(-1)
    return RawSignal(values, tuple(map(why.__getitem__, batch.kinds)))
