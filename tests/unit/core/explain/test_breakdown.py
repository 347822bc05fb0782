"""The plain breakdown: ScoreBreakdown's names, each signal's parts under its name, for one value or a column."""

from __future__ import annotations

import numpy as np

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.core.explain.breakdown import LOGGED_SIGNAL_PARTS, breakdown, signal_rows, signals
from memrank.core.scoring.scores import SignalColumn


def test_a_message_becomes_its_fields_then_its_signals() -> None:
    b = pb.ScoreBreakdown(retrieval_score=0.5, combined_score=0.25, final_score=0.3, token_count=7,
                          token_count_estimated=True, reasons=["r"],
                          signals=[pb.SignalScore(name="lexical", raw=2.0, normalized=1.0, weight=0.25,
                                                  contribution=0.25, reasons=["x", "y"])])
    out = breakdown(b, lambda v: v if isinstance(v, str | int | float) else list(v))
    assert list(out) == ["retrieval_score", "combined_score", "final_score", "quality_score", "blend_term",
                         "marginal_gain", "token_count", "token_count_estimated", "reasons", "signals"]
    assert (out["final_score"], out["token_count"], out["token_count_estimated"], out["reasons"]) == (0.3, 7, True,
                                                                                                      ["r"])
    assert out["signals"] == {"lexical": {"raw": 2.0, "normalized": 1.0, "weight": 0.25, "contribution": 0.25,
                                          "reasons": ["x", "y"]}}


def test_the_logged_parts_are_the_columns_themselves() -> None:
    raw, norm, contrib = np.array([1.0, 3.0]), np.array([0.0, 1.0]), np.array([0.0, 0.5])
    col = SignalColumn("recency", 0.5, "minmax", raw, norm, contrib, [(), ()])
    rows = signal_rows([col], LOGGED_SIGNAL_PARTS)
    assert rows == (("recency", raw, norm, contrib),) and rows[0][1] is raw  # references, no copies
    assert signals(rows, LOGGED_SIGNAL_PARTS, lambda a: a.tolist()) == {
        "recency": {"raw": [1.0, 3.0], "normalized": [0.0, 1.0], "contribution": [0.0, 0.5]}}
