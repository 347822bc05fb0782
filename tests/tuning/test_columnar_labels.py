"""A labelled request in the columnar form is read like the per-candidate one: its ids are the candidates'."""

from __future__ import annotations

import json

import pytest

from memrank.config import load_settings
from memrank.tuning.dataset import TuningError
from memrank.tuning.labels import query_of_line

SETTINGS = load_settings(env={})


def _line(relevant: dict[str, int]) -> str:
    request = {"query": "kafka retry", "columns": {"ids": ["a", "b"], "contents": ["kafka retry policy", "lunch"],
                                                   "retrievalScores": [0.9, 0.2]}}
    return json.dumps({"request": request, "relevant": relevant})


def test_a_columnar_request_s_ids_are_its_candidates() -> None:
    profile = SETTINGS.profiles["default"]
    query = query_of_line("l1", _line({"a": 2}), profile, SETTINGS.limits, 1.767e9)
    assert query is not None
    with pytest.raises(TuningError, match="'zz'"):
        query_of_line("l2", _line({"zz": 1}), profile, SETTINGS.limits, 1.767e9)
