"""Reading the conversations file: JSON Lines split at line feeds only, plain or gzip."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from memrank.evaluation.data import load_conversations
from tests.support import eval_fixture as fixture

# The characters str.splitlines() breaks at that may sit raw in a JSON string (the others are controls below
# U+0020, which JSON writes escaped).
BREAKS = "\u2028\u2029\x85"


def _conversation_with_breaks() -> dict[str, object]:
    conv = fixture.conversation()
    turns = conv["turns"]
    assert isinstance(turns, list)
    turns[0] = {**turns[0], "text": f"line{BREAKS}end"}
    return conv


def _text(conv: dict[str, object]) -> str:
    text = json.dumps(conv, ensure_ascii=False) + "\n" + json.dumps(fixture.conversation()) + "\n"
    assert all(c in text for c in BREAKS)  # written raw, not as \u escapes: a valid JSON Lines file
    assert len(text.splitlines()) > 2  # which splitlines() would cut inside the first object
    return text


@pytest.mark.parametrize("name", ["data.jsonl", "data.jsonl.gz", "gzip-without-suffix.jsonl"])
def test_raw_line_separators_inside_a_text(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    data = _text(_conversation_with_breaks()).encode("utf-8")
    path.write_bytes(data if name == "data.jsonl" else gzip.compress(data))
    first, second = load_conversations(path)
    assert first.turns[0].text == f"line{BREAKS}end"
    assert first.turns[1:] == second.turns[1:] and len(first.questions) == len(second.questions) == 6


def test_gzip_file_with_embeddings_matches_the_plain_file(tmp_path: Path) -> None:
    data, npz = fixture.write(tmp_path)
    packed = tmp_path / "data.jsonl.gz"
    packed.write_bytes(gzip.compress(data.read_bytes()))
    plain, = load_conversations(data, npz)
    unpacked, = load_conversations(packed, npz)
    assert plain.turns == unpacked.turns and plain.questions == unpacked.questions
    assert plain.turn_emb is not None and unpacked.turn_emb is not None
    assert (plain.turn_emb == unpacked.turn_emb).all()
