"""One Rank request per question, as a real caller would build it.

Each candidate of the pool carries:

- ``content`` "speaker: text" (what BM25 indexed) and ``token_count``, the
  number of word and punctuation tokens (``\\w+|[^\\w\\s]``: close to a
  subword count for English chat, and the same count the harness uses for
  the 512-token budget metric);
- ``facet_scores`` ``bm25`` (raw BM25) and ``dense`` (raw cosine), for every
  candidate since both retrievers score every turn;
- ``retrieval_score`` = 0.5 x min-max(bm25) + 0.5 x min-max(dense), min-max
  over the pool, so it is in [0, 1] as the API requires (BM25 alone when
  there are no embeddings): the single score a hybrid store reports;
- ``created_at`` = ``last_accessed_at`` = the session's time (turns are never
  re-read in LoCoMo), and the turn's ``embedding``;
- ``thread`` = the session, ``position`` = the turn's order in it, and
  ``speaker`` = who said it, so the context and speaker signals can work.

``relevance_threshold`` is 0, as the framework adapters send it for relative
scores (``scores="minmax"`` or ``"order"``): a min-max score puts the pool's
weakest candidate at 0 by construction, so a floor on each candidate would
drop it for where the scaling put it, not for what it says (``default``'s own
floor judges the batch and would drop nothing here either: the best score of
a pool is at least 0.5).

``reranker_score``: the caller's reranker score of the candidate, when
``memrank eval --candidate-scores reranker=FILE`` holds one for this question
and turn (``evaluation.candidate_scores``); a candidate without one is sent
without (the server scores it as the batch's lowest).

``reference_time`` is one hour after the conversation's last session.
``explicit_lookup`` is true: a question about what was said is a lookup of a
specific fact, so short replies ("Yes, in May!") must stay reachable; general
recall (no explicit lookup) would gate them as passing remarks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.convert import seconds_to_ts
from memrank.evaluation.data import Conversation

_TOKEN = re.compile(r"\w+|[^\w\s]")
REFERENCE_DELAY_SECONDS = 3600.0


def count_tokens(text: str) -> int:
    """Word and punctuation tokens of a text (at least 1)."""
    return max(1, len(_TOKEN.findall(text)))


def _min_max(x: np.ndarray) -> np.ndarray:
    lo, hi = float(x.min()), float(x.max())
    return (x - lo) / (hi - lo) if hi > lo else np.full_like(x, 0.5)


def retrieval_scores(bm25: np.ndarray, dense: np.ndarray | None) -> np.ndarray:
    """The pool's hybrid retrieval score in [0, 1]: mean of the min-max normalised retrievers."""
    if dense is None:
        return _min_max(bm25)
    return np.clip(0.5 * _min_max(bm25) + 0.5 * _min_max(dense), 0.0, 1.0)


def reference_time(conv: Conversation) -> float:
    """Just after the last session."""
    return max(t.time for t in conv.turns) + REFERENCE_DELAY_SECONDS


def build_request(conv: Conversation, q_index: int, pool: np.ndarray, bm25: np.ndarray, dense: np.ndarray | None,
                  profile: str, explicit_lookup: bool = True,
                  reranker: Mapping[str, float] | None = None) -> pb.RankRequest:
    """The Rank request of one question over its candidate pool (turn indices); ``reranker``: turn id -> the
    caller's reranker score, for the turns that have one."""
    question = conv.questions[q_index]
    b = bm25[pool]
    d = dense[pool] if dense is not None else None
    retrieval = retrieval_scores(b, d)
    candidates = []
    for k, i in enumerate(pool.tolist()):
        turn = conv.turns[i]
        facets = {"bm25": float(b[k])} if d is None else {"bm25": float(b[k]), "dense": float(d[k])}
        c = pb.Candidate(id=turn.id, content=turn.content, retrieval_score=float(retrieval[k]),
                         facet_scores=facets, token_count=count_tokens(turn.content),
                         thread=f"session-{turn.session}", position=turn.number, speaker=turn.speaker)
        c.created_at.CopyFrom(seconds_to_ts(turn.time))
        c.last_accessed_at.CopyFrom(seconds_to_ts(turn.time))
        if reranker is not None and turn.id in reranker:
            c.reranker_score = reranker[turn.id]
        if conv.turn_emb is not None:
            c.embedding.extend(conv.turn_emb[i].tolist())
        candidates.append(c)
    req = pb.RankRequest(request_id=question.key, query=question.text, profile=profile, candidates=candidates,
                         placement=pb.PLACEMENT_BEST_FIRST, explicit_lookup=explicit_lookup,
                         explain=pb.EXPLAIN_LEVEL_NONE, relevance_threshold=0.0)
    req.reference_time.CopyFrom(seconds_to_ts(reference_time(conv)))
    return req


def ranking_of(response: pb.RankResponse) -> list[str]:
    """Selected ids by rank (1 = best), whatever the placement."""
    return [m.id for m in sorted(response.selected, key=lambda m: m.rank)]
