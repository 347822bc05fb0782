"""Four small self-written conversations in the LoCoMo normalised form, with hashed bag-of-words embeddings.

Written for these tests (no LoCoMo text): two sessions of six turns between two
people per conversation, built from one template with different names,
things, colours and towns, and six questions each (five of categories 1-4,
one adversarial, which tuning leaves out). Some answers sit next to the turn
that matches the question ("my sister ... loves it too"), so the context
signal has something to find. Embeddings come from ``tests.support.eval_fixture.embed``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from memrank.evaluation.data import Conversation, embedding_arrays
from memrank.evaluation.report import OVERALL_CATEGORIES
from memrank.evaluation.requests import build_request
from memrank.evaluation.retrieval import Retriever, pool
from tests.support.eval_fixture import embed

CAST = (
    # (asker, owner, sister, thing, colour, city, town, hobby)
    ("Ada", "Ben", "Ilse", "kayak", "teal", "Porto", "Vik", "pottery"),
    ("Cleo", "Dev", "Maren", "violin", "amber", "Lyon", "Hov", "chess"),
    ("Ema", "Finn", "Runa", "telescope", "violet", "Graz", "Sand", "weaving"),
    ("Gus", "Hana", "Tove", "lantern", "silver", "Turku", "Bryn", "archery"),
)
DATES = ("2024-05-04T09:00:00", "2024-07-19T18:45:00")


def _turns(cast: tuple[str, ...]) -> list[list[tuple[str, str]]]:
    a, b, sister, thing, colour, city, town, hobby = cast
    return [
        [(a, f"Hi {b}, how was your week?"),
         (b, f"Good! I bought a {colour} {thing} in {city} on Saturday."),
         (a, "Nice, who else will use it?"),
         (b, f"My sister {sister} loves it too."),
         (a, f"I started learning {hobby} at the library."),
         (b, "That is great, tell me more next time.")],
        [(a, f"{b}, did you take the {thing} out yet?"),
         (b, f"Yes, we carried it to the lake near {town}."),
         (a, f"My {hobby} teacher says I improve fast."),
         (b, f"Good to hear. The {thing} got a scratch though."),
         (a, "Oh no, can it be fixed?"),
         (b, f"A shop in {city} will repair it on Friday.")],
    ]


def conversation(k: int) -> dict[str, object]:
    """Conversation k as one dev.jsonl object."""
    cast = CAST[k]
    a, b, _, thing, _, _, _, _ = cast
    sessions = _turns(cast)
    turns = [{"id": f"D{s}:{i}", "session": s, "timestamp": DATES[s - 1], "speaker": who, "text": text}
             for s, lines in enumerate(sessions, 1) for i, (who, text) in enumerate(lines, 1)]
    questions = [
        (f"What colour is the {thing} {b} bought?", 4, ["D1:2"]),
        (f"Who loves {b}'s new {thing} too?", 4, ["D1:4"]),
        (f"What is {a} learning at the library?", 4, ["D1:5"]),
        (f"Where did {b} carry the {thing}, and what happened to it?", 1, ["D2:2", "D2:4"]),
        (f"When will the {thing} be repaired?", 2, ["D2:6"]),
        (f"What colour is the {thing} {a} bought?", 5, ["D1:2"]),
    ]
    return {"conversation_id": f"toy-{k + 1}", "speakers": [a, b],
            "turns": turns, "questions": [{"question": q, "category": c, "evidence": e} for q, c, e in questions]}


def write(folder: Path) -> tuple[Path, Path]:
    """Write data.jsonl and embeddings.npz into folder; returns their paths."""
    convs = [conversation(k) for k in range(len(CAST))]
    data = folder / "data.jsonl"
    data.write_text("".join(json.dumps(c) + "\n" for c in convs), encoding="utf-8")
    npz = folder / "embeddings.npz"
    np.savez(npz, **embedding_arrays(convs, embed))
    return data, npz


def eval_requests_as_labels(convs: list[Conversation]) -> list[str]:
    """The Rank requests `memrank eval` sends (its pool, its build_request), as --labels lines."""
    from google.protobuf import json_format

    lines = []
    for conv in convs:
        retriever = Retriever.build(conv)
        for qi, q in enumerate(conv.questions):
            if not q.evidence or q.category not in OVERALL_CATEGORIES:
                continue
            bm25, dense = retriever.bm25(q.text), retriever.dense(qi)
            req = build_request(conv, qi, pool(conv, bm25, dense), bm25, dense, "", True)
            lines.append(json.dumps({"request": json_format.MessageToDict(req),
                                     "relevant": dict.fromkeys(q.evidence, 1), "group": conv.id}))
    return lines
