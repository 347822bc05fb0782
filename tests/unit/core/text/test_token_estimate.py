"""One token estimate, ceil(characters / 4): a candidate without token_count and the decision record's query
both use core.text.words.estimated_tokens (issue #34: the rule lived in two places)."""

from __future__ import annotations

import numpy as np

from memrank.core.pipeline import estimate_tokens
from memrank.core.text.words import estimated_tokens
from memrank.decisions.mask import Masker
from memrank.decisions.record import decision_record
from tests.support.build import batch


def test_ceil_of_a_quarter_by_hand() -> None:
    assert [estimated_tokens(c) for c in (0, 1, 3, 4, 5, 8, 9)] == [0, 1, 1, 1, 2, 2, 3]
    assert estimated_tokens(np.array([0, 4, 5], dtype=np.int64)).tolist() == [0, 1, 2]


def test_a_candidate_without_a_count_is_estimated_so_and_a_sent_count_is_kept() -> None:
    b = batch({"content": "x" * 9}, {"content": "y" * 9, "token_count": 7})
    tokens, estimated = estimate_tokens(b)
    assert tokens.tolist() == [3, 7] and estimated.tolist() == [True, False]


def test_the_decision_records_query_tokens_use_the_same_estimate() -> None:
    capture = {"query": None, "query_length": 9, "ids": (), "layers": (), "kinds": (),
               "sources": np.zeros(0, dtype=np.int8), "content_length": np.zeros(0, dtype=np.int64),
               "contents": None, "token_count": np.zeros(0, dtype=np.int64),
               "token_estimated": np.zeros(0, dtype=bool), "signals": (), "final": np.zeros(0),
               "drop": np.zeros(0, dtype=np.int8), "rank": np.zeros(0, dtype=np.int64),
               "position": np.zeros(0, dtype=np.int64), "covered_by": np.zeros(0, dtype=np.int64),
               "decision_id": "d", "request_id": "r", "server_time": 0.0, "reference_time": 0.0, "profile": "p",
               "policy_version": "v", "weights": (), "shadow": None, "forced": False, "allocations": []}
    assert decision_record(capture, Masker("omit", None))["query"] == {"length": 9, "tokens": 3}
