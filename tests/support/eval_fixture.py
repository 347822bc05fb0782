"""A small self-written conversation in the LoCoMo normalised form, and deterministic toy embeddings.

Written for these tests (no LoCoMo text). Three sessions between Nora and
Theo, 24 turns; the last two turns are the same sentence sent twice by Theo, so any ranking that
puts both in its top 5 has one redundant pair. Embeddings are hashed bags of
words (16 dims): deterministic, and identical texts get identical vectors.
"""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path

import numpy as np

SESSIONS = (
    ("2024-03-02T10:00:00", [
        ("Nora", "Morning Theo! How was the weekend?"),
        ("Theo", "Busy. I finally repaired the old canoe my grandfather built."),
        ("Nora", "That sounds like hard work. What colour did you paint it?"),
        ("Theo", "A deep turquoise, with a small yellow stripe near the bow."),
        ("Nora", "Lovely. I started pottery classes at the community studio on Tuesdays."),
        ("Theo", "Pottery suits you. What are you making first?"),
        ("Nora", "A set of six teal mugs for my sister Ilse."),
        ("Theo", "She will love them. Talk soon!"),
    ]),
    ("2024-04-14T18:30:00", [
        ("Theo", "Hey Nora, big news: I accepted a job as a ferry mechanic in Halden."),
        ("Nora", "Congratulations! When do you start?"),
        ("Theo", "The first Monday of May, so I move north next week."),
        ("Nora", "How is the canoe travelling there?"),
        ("Theo", "On the roof of my van, strapped with four orange straps."),
        ("Nora", "The mugs cracked in the kiln, so I am making them again."),
        ("Theo", "Bad luck. Glaze bubbles?"),
        ("Nora", "The teacher said the clay was too wet when it was fired."),
    ]),
    ("2024-06-20T20:15:00", [
        ("Nora", "Theo, how is Halden treating you?"),
        ("Theo", "Great. I paddled the turquoise canoe across the fjord on Sunday."),
        ("Nora", "Wow. I finished the teal mugs and gave them to Ilse at her birthday dinner."),
        ("Theo", "Did she like them?"),
        ("Nora", "She cried a little and now drinks cardamom tea from one every morning."),
        ("Theo", "I would like one of those mugs myself one day."),
        ("Theo", "Sounds good, see you Saturday at the harbour market!"),
        ("Theo", "Sounds good, see you Saturday at the harbour market!"),
    ]),
)

# (question, category, evidence): two single-hop with words only their evidence has, one temporal, one
# multi-hop, one open-domain, one adversarial (category 5, reported separately).
QUESTIONS = (
    ("What colour is the canoe Theo repaired?", 4, ["D1:4"]),
    ("Who did Nora make the pottery mugs for?", 4, ["D1:7"]),
    ("When does Theo start the ferry mechanic job?", 2, ["D2:3"]),
    ("Why did the mugs crack, and who finally got them?", 1, ["D2:8", "D3:3"]),
    ("Where will Nora and Theo meet on Saturday?", 3, ["D3:7"]),
    ("What colour are the straps on Nora's van?", 5, ["D2:5"]),
)

DIM = 16
_WORD = re.compile(r"[a-z]+")
STOP = frozenset((
    "a", "an", "the", "and", "of", "on", "in", "at", "to", "is", "are", "was", "be", "did", "do", "does", "i", "my",
    "me", "you", "your", "it", "its", "with", "for", "what", "who", "when", "where", "why", "how", "there", "their",
    "them", "so", "now", "one", "from", "too",
))


def embed(text: str) -> np.ndarray:
    """Hashed bag of content words, unit-norm float32 (crc32, so identical on every platform)."""
    v = np.zeros(DIM, dtype=np.float32)
    for w in _WORD.findall(text.lower()):
        if w not in STOP:
            v[zlib.crc32(w.encode()) % DIM] += 1.0
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def conversation() -> dict[str, object]:
    """The conversation as one dev.jsonl object."""
    turns = [{"id": f"D{s}:{i}", "session": s, "timestamp": ts, "speaker": who, "text": text}
             for s, (ts, lines) in enumerate(SESSIONS, 1) for i, (who, text) in enumerate(lines, 1)]
    sessions = [{"session": s, "date_time": ts, "timestamp": ts, "n_turns": len(lines)}
                for s, (ts, lines) in enumerate(SESSIONS, 1)]
    questions = [{"question": q, "answer": None if c == 5 else "-", "category": c, "evidence": e}
                 for q, c, e in QUESTIONS]
    return {"conversation_id": "toy-1", "speakers": ["Nora", "Theo"], "sessions": sessions, "turns": turns,
            "questions": questions}


def write(folder: Path) -> tuple[Path, Path]:
    """Write data.jsonl and embeddings.npz into folder; returns their paths."""
    conv = conversation()
    data = folder / "data.jsonl"
    data.write_text(json.dumps(conv) + "\n", encoding="utf-8")
    turns = conv["turns"]
    assert isinstance(turns, list)
    npz = folder / "embeddings.npz"
    np.savez(npz, turn_ids=np.array([f"toy-1/{t['id']}" for t in turns]),
             turn_emb=np.stack([embed(f"{t['speaker']}: {t['text']}") for t in turns]).astype(np.float16),
             question_keys=np.array([f"toy-1/q{i}" for i in range(len(QUESTIONS))]),
             question_emb=np.stack([embed(q) for q, _, _ in QUESTIONS]).astype(np.float16),
             model=np.array(["hashed bag of words, 16 dims (tests/eval/fixture.py)"]))
    return data, npz
