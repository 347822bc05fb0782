"""The shadow report's arithmetic: DCG written as the formula, Wilson's interval against a published value, the
served selection read from a decision record's ranks, and the tally over joined records."""

from __future__ import annotations

import math
from typing import Any

import pytest

from memrank.tuning.shadow_report import dcg, served_selection, shadow_report, wilson


def test_dcg_is_the_grades_discounted_by_log2_of_rank_plus_one() -> None:
    assert dcg(["a", "b", "c"], {"b": 3, "c": 1, "z": 2}) == pytest.approx(3 / math.log2(3) + 1 / math.log2(4))
    assert dcg([], {"a": 3}) == 0.0


def test_wilson_interval_of_5_in_10_is_the_textbook_one() -> None:
    lo, hi = wilson(5, 10) or (0.0, 0.0)
    assert (round(lo, 4), round(hi, 4)) == (0.2366, 0.7634)
    assert wilson(0, 0) is None
    assert wilson(0, 4) == (0.0, pytest.approx(0.4899, abs=1e-4))


def _decision(did: str, ranks: list[int | None], shadow: list[str] | None) -> dict[str, Any]:
    ids = [f"m{i}" for i in range(len(ranks))]
    return {"decision_id": did, "request_id": did, "profile": "default",
            "shadow": None if shadow is None else {"profile": "cand", "selected_ids": shadow},
            "candidates": {"id": ids, "rank": ranks}}


def test_served_selection_is_in_rank_order() -> None:
    assert served_selection(_decision("d", [2, None, 1, 3], None)) == ["m2", "m0", "m3"]


def test_the_tally_by_hand() -> None:
    decisions = [_decision("d1", [1, 2, None], ["m2", "m0"]),  # served m0 m1, shadow m2 m0
                 _decision("d2", [1, None, None], ["m1"]),
                 _decision("d3", [1, None, None], ["m0"]),
                 _decision("d4", [1, None, None], None),
                 _decision("d5", [1, None, None], ["m1"])]
    feedback = [{"feedback_id": "f1", "decision_id": "d1", "labels": [{"candidate_id": "m2", "relevance": 2}]},
                {"feedback_id": "f2", "decision_id": "d2", "labels": [{"candidate_id": "m0", "relevance": 1}]},
                {"feedback_id": "f3", "decision_id": "d3", "labels": [{"candidate_id": "m0", "relevance": 3}]},
                {"feedback_id": "f4", "decision_id": "d4", "labels": [{"candidate_id": "m0", "relevance": 3}]},
                {"feedback_id": "f5", "decision_id": "d5", "labels": [{"candidate_id": "m0", "relevance": 0}]}]
    report = shadow_report(decisions, feedback)
    tally = report.pairs[("default", "cand")]
    # d1: the shadow holds m2 (2 / log2 2), the served selection nothing; d2: served holds m0; d3: same selection
    assert (tally.served, tally.shadow, tally.tie) == (1, 1, 1)
    assert (report.without_shadow, report.nothing_relevant) == (1, 1)
    assert tally.rate("tie") == 1 / 3
