"""LoCoMo-shaped data: conversations of timestamped turns, questions with evidence turn ids.

Format (JSON Lines, plain or gzip-compressed; see the dataset's README), one object per line: ``conversation_id``,
``turns`` [{id, session, timestamp (ISO-8601, no zone: read as UTC), speaker,
text}], ``questions`` [{question, category, evidence [turn id...]}]. Embeddings
(optional) come from an ``.npz`` with ``turn_ids`` ("<conv>/<turn id>"),
``turn_emb``, ``question_keys`` ("<conv>/q<index>") and ``question_emb``.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


@dataclass(frozen=True)
class Turn:
    """One turn of a conversation."""

    id: str
    session: int
    time: float  # unix seconds of the session
    speaker: str
    text: str
    number: int = 0  # order within its session (0-based, file order)

    @property
    def content(self) -> str:
        """The text a retriever indexes and the sidecar sees: "speaker: text"."""
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True)
class Question:
    """A question with the ids of the turns that answer it."""

    key: str  # "<conversation>/q<index>"
    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Conversation:
    """One conversation: its turns, questions and (optionally) embeddings, unit-norm float32."""

    id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    turn_emb: np.ndarray | None = None  # (turns, dim)
    question_emb: np.ndarray | None = None  # (questions, dim)


def parse_time(text: str) -> float:
    """ISO-8601 without a zone, read as UTC, in unix seconds."""
    t = datetime.fromisoformat(text)
    return (t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp()


def _conversation(raw: dict[str, Any]) -> Conversation:
    cid = str(raw["conversation_id"])
    seen: dict[int, int] = {}
    turns = []
    for t in raw["turns"]:
        session = int(t["session"])
        number = seen[session] = seen.get(session, -1) + 1
        turns.append(Turn(str(t["id"]), session, parse_time(str(t["timestamp"])), str(t["speaker"]), str(t["text"]),
                          number))
    questions = tuple(Question(f"{cid}/q{i}", str(q["question"]), int(q["category"]), tuple(q["evidence"]))
                      for i, q in enumerate(raw["questions"]))
    return Conversation(cid, tuple(turns), questions)


def _unit(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.asarray(x / np.where(norms > 0, norms, 1.0), dtype=np.float32)


def attach_embeddings(convs: list[Conversation], path: str | Path) -> list[Conversation]:
    """The conversations with their turn and question embeddings from an .npz (re-normalised)."""
    with np.load(path, allow_pickle=False) as z:
        turn_row = {str(k): i for i, k in enumerate(z["turn_ids"])}
        q_row = {str(k): i for i, k in enumerate(z["question_keys"])}
        turn_emb, q_emb = _unit(z["turn_emb"]), _unit(z["question_emb"])
    out = []
    for c in convs:
        try:
            t = turn_emb[[turn_row[f"{c.id}/{turn.id}"] for turn in c.turns]]
            q = q_emb[[q_row[q.key] for q in c.questions]]
        except KeyError as exc:
            raise ValueError(f"{path}: no embedding for {exc.args[0]!r}") from None
        out.append(Conversation(c.id, c.turns, c.questions, t, q))
    return out


_GZIP_MAGIC = b"\x1f\x8b"


def embedding_arrays(conversations: list[dict[str, Any]], embed: Callable[[str], np.ndarray]) -> dict[str, np.ndarray]:
    """The arrays of an embeddings ``.npz`` that ``attach_embeddings`` reads, for conversations in the JSON Lines
    shape: every turn's ``"speaker: text"`` and every question embedded with ``embed``, keyed as above."""
    turn_ids, turn_emb, question_keys, question_emb = [], [], [], []
    for c in conversations:
        for t in c["turns"]:
            turn_ids.append(f"{c['conversation_id']}/{t['id']}")
            turn_emb.append(embed(f"{t['speaker']}: {t['text']}"))
        for i, q in enumerate(c["questions"]):
            question_keys.append(f"{c['conversation_id']}/q{i}")
            question_emb.append(embed(q["question"]))
    return {"turn_ids": np.array(turn_ids), "turn_emb": np.stack(turn_emb),
            "question_keys": np.array(question_keys), "question_emb": np.stack(question_emb)}


def read_json_lines(path: str | Path) -> list[Any]:
    """The JSON values of a JSON Lines file (plain or gzip), split at line feeds only; blank lines skipped."""
    raw = Path(path).read_bytes()
    if str(path).endswith(".gz") or raw[:2] == _GZIP_MAGIC:
        raw = gzip.decompress(raw)
    # JSON Lines separates values by "\n" alone: splitlines() would also cut at U+2028/U+2029, \x1c-\x1e, \x85...
    return [json.loads(line) for line in raw.decode("utf-8").split("\n") if line.strip()]


def load_conversations(path: str | Path, embeddings: str | Path | None = None) -> list[Conversation]:
    """Read the JSON-lines file (plain or gzip), attaching embeddings when a path is given."""
    convs = [_conversation(raw) for raw in read_json_lines(path)]
    return attach_embeddings(convs, embeddings) if embeddings else convs
