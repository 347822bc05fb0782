"""Speaker by the size of the conversation: two-person talk and many-person talk as two signals.

In a conversation between two people, the question that names one of them
("What did Caroline research?") is nearly always answered by that person's own
words (LoCoMo: 97 % of the evidence turns). When many people talk (a TV
episode with 9-20 speakers), naming someone says much less about who said the
answer: it is often said *to* them or *about* them (FriendsQA: 59 % of the
evidence by the named person, against 36 % of the scene's turns). One weight
cannot serve both, so the speaker signal is split by a feature of the request,
the number of distinct non-empty speakers among its candidates, ``n``::

    speaker_pair  = speaker if n <= 2 else 0
    speaker_crowd = speaker if n >  2 else 0

(``speaker`` as in ``speaker.py``: 1 where the query names the candidate's
speaker.) Each weight is learned on its own shape; a profile gives the crowd a
small weight or none. Stateless: ``n`` is read from the batch alone. A batch
with one speaker (every candidate the user's) counts as two-person talk.
"""

from __future__ import annotations

import numpy as np

from memrank.core.batch import Batch
from memrank.core.profile import Profile
from memrank.core.reasons import Same
from memrank.core.signals.base import RawSignal, ScoringContext
from memrank.core.signals.speaker import speaker

PAIR = 2  # at most this many distinct speakers: two-person talk


def distinct_speakers(batch: Batch) -> int:
    """The number of distinct non-empty speakers among the batch's candidates."""
    return len(set(batch.speakers) - {""})


def _split(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray, crowd: bool) -> RawSignal:
    n = distinct_speakers(batch)
    if (n > PAIR) != crowd:
        what = f"{n} speakers: more than {PAIR}" if crowd is False else f"{n} speakers: at most {PAIR}"
        return RawSignal(np.zeros(batch.n), Same(batch.n, f"{what}, not counted here"))
    return speaker(batch, ctx, profile, population)


def speaker_pair(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """1 where the query names the candidate's speaker and at most two people speak in the batch, else 0."""
    return _split(batch, ctx, profile, population, crowd=False)


def speaker_crowd(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """1 where the query names the candidate's speaker and more than two people speak in the batch, else 0."""
    return _split(batch, ctx, profile, population, crowd=True)
