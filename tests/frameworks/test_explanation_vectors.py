"""The adapters' answer against the shared vectors (tests/vectors/frameworks/explanation.json): the selected
documents in placement order, each with its explanation, the documented keys in the documented order.

clients/typescript/test/explanation.test.ts checks the LangChain.js adapter against the same file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.integrations.mapping import selections

VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "frameworks" / "explanation.json"
CASES: list[dict[str, Any]] = json.loads(VECTORS.read_text(encoding="utf-8"))["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_selections_match_the_vector(case: dict[str, Any]) -> None:
    request = json_format.ParseDict(case["request"], pb.RankRequest())
    response = json_format.ParseDict(case["response"], pb.RankResponse())
    got = [{"index": s.index, "score": s.score, "explanation": s.explanation} for s in selections(request, response)]
    assert got == case["expect"]
    # The order a reader sees the keys in is the documented one (JSON dicts compare without it).
    assert [list(s["explanation"]) for s in got] == [list(s["explanation"]) for s in case["expect"]]
    assert [type(v) for s in got for v in s["explanation"].values()] == [
        type(v) for s in case["expect"] for v in s["explanation"].values()]


def test_the_vectors_cover_both_shapes() -> None:
    """With and without breakdowns, and an empty answer: the file is not vacuous."""
    kinds = {("signals" in s["explanation"]) for c in CASES for s in c["expect"]}
    assert kinds == {True, False} and any(not c["expect"] for c in CASES)
