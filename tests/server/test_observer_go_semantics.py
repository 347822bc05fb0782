"""agent-observer through the live server: Go's number is final_score, relevance outside [0, 1] taken as Go takes it.

Expected values are DESIGN.md's scoreMemory by hand: kind prior + 0.30 x relevance + 0.25 x the share of
task words found + min(access_count / 50, 0.10).
"""

from __future__ import annotations

import grpc
import pytest

from memrank.client import RankingClient, RankingError

REF = "2026-06-01T12:00:00Z"


def _request(candidates: list[dict[str, object]], **extra: object) -> dict[str, object]:
    return {"profile": "agent-observer", "query": "fix the dialog", "referenceTime": REF,
            "candidates": candidates, **extra}


OUT_OF_RANGE = [
    {"id": "f1", "kind": "failure", "content": "Dialog crashed", "retrievalScore": 1.5},
    {"id": "n1", "kind": "fact", "content": "İstanbul", "retrievalScore": -0.5},
    {"id": "n2", "content": "nothing here", "retrievalScore": -2.0, "accessCount": 3},
]


def test_relevance_outside_the_unit_interval_scores_as_go_does(client: RankingClient) -> None:
    resp = client.rank(_request(OUT_OF_RANGE))
    assert not resp.dropped  # a negative score is ranked last, not dropped below min_score 0
    finals = {m.id: m.breakdown.final_score for m in resp.selected}
    # task words: fix, the, dialog; "Dialog crashed" holds "dialog" only
    assert finals["f1"] == pytest.approx(0.20 + 0.30 * 1.5 + 0.25 * (1 / 3), abs=1e-12)  # 0.7333, the issue's
    assert finals["n1"] == pytest.approx(0.30 + 0.30 * -0.5, abs=1e-12)
    assert finals["n2"] == pytest.approx(0.0 + 0.30 * -2.0 + min(3 / 50, 0.10), abs=1e-12)
    assert [m.id for m in resp.selected] == ["f1", "n1", "n2"]
    # The public score is the calibrated one (3 buckets, prior clipped to [0, 1]), not Go's number.
    top = resp.selected[0]
    assert top.score == pytest.approx(2 / 3 + (1 / 3) * (0.1 + 0.8 * finals["f1"]), abs=1e-12)
    assert top.score != pytest.approx(finals["f1"], abs=1e-3)
    assert {m.id: m.breakdown.retrieval_score for m in resp.selected} == {"f1": 1.5, "n1": -0.5, "n2": -2.0}


def test_go_lower_casing_through_the_server(client: RankingClient) -> None:
    # The reproductions: Go lower-cases "İ" to "i" and "Σ" to "σ" wherever it stands.
    resp = client.rank({**_request([{"id": "t", "kind": "fact", "content": "Trip to istanbul", "retrievalScore": 0.1},
                                    {"id": "g", "kind": "fact", "content": "η οδοσ", "retrievalScore": 0.1}]),
                        "query": "İstanbul trip ΟΔΟΣ"})
    finals = {m.id: m.breakdown.final_score for m in resp.selected}
    assert finals["t"] == pytest.approx(0.30 + 0.30 * 0.1 + 0.25 * (2 / 3), abs=1e-12)
    assert finals["g"] == pytest.approx(0.30 + 0.30 * 0.1 + 0.25 * (1 / 3), abs=1e-12)
    resp = client.rank({**_request([{"id": "t", "kind": "fact", "content": "trip to istanbul",
                                     "retrievalScore": 0.1}]), "query": "İstanbul trip"})
    assert resp.selected[0].breakdown.final_score == pytest.approx(0.58, abs=1e-12)


@pytest.mark.parametrize(("extra", "value"), [
    ({"profile": "default"}, 1.5),
    ({"profile": "lians-recall"}, -0.5),
    ({"profile": ""}, 1.5),
    ({"shadowProfile": "default"}, 1.5),  # the shadow ranking would read it as a [0, 1] score
    ({}, "NaN"),
    ({}, "Infinity"),
])
def test_other_profiles_and_non_finite_values_are_still_refused(client: RankingClient, extra: dict[str, object],
                                                                value: object) -> None:
    cands = [{"id": "a", "content": "x", "retrievalScore": 0.5}, {"id": "b", "content": "y", "retrievalScore": value}]
    with pytest.raises(RankingError) as info:
        client.rank({**_request(cands), **extra})
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "candidates[1].retrieval_score" in info.value.fields


def test_a_shadow_profile_of_the_same_formula_accepts_it(client: RankingClient) -> None:
    resp = client.rank(_request(OUT_OF_RANGE, shadowProfile="agent-observer"))
    assert len(resp.selected) == 3 and resp.shadow.profile == "agent-observer"
