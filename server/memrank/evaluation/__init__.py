"""Caller-side evaluation harness: `memrank eval` on LoCoMo-shaped conversations.

A real agent's side of the call: a hybrid retriever (BM25 + dense cosine)
builds each question's candidate pool, one ``Rank`` request per question goes
to a live sidecar over gRPC, and the returned ranking is scored against the
question's evidence turns. Baselines (bm25, dense, rrf, minmax, recent) are
ranked by the harness itself. Data stays outside the repository: every entry
point takes paths.

Optional dependencies (the ``eval`` extra: bm25s, matplotlib, tqdm) are
imported lazily; ``require`` names the extra when one is missing.
"""

from __future__ import annotations

from memrank.evaluation.data import Conversation, Question, Turn, load_conversations
from memrank.evaluation.metrics import QuestionScores, score_ranking

__all__ = ["Conversation", "Question", "QuestionScores", "Turn", "load_conversations", "score_ranking"]
