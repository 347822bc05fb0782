"""Candidate.reranker_score and columns.reranker_scores: refused when not finite, naming the field in the form it
came in; carried into the Batch (NaN = no score); the same answer in either form."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.call import Call, Policy, RankInput, handle_rank
from memrank.api.convert import request_to_domain
from memrank.api.validate import validate_rank_request
from memrank.config import load_settings
from memrank.core.errors import InvalidRequest
from tests.support.columnar import to_columnar

SETTINGS = load_settings(env={})


def _request(*scores: float | None, profile: str = "with-reranker") -> pb.RankRequest:
    req = pb.RankRequest(query="where did we go", profile=profile)
    for i, s in enumerate(scores):
        c = req.candidates.add(id=f"m{i}", content=f"memory {i}", retrieval_score=0.5, token_count=5)
        if s is not None:
            c.reranker_score = s
    return req


def _violations(req: pb.RankRequest) -> list[tuple[str, str]]:
    with pytest.raises(InvalidRequest) as err:
        validate_rank_request(req, SETTINGS.limits)
    return [(v.field, v.description) for v in err.value.violations]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_non_finite_score_is_refused_naming_the_candidate(bad: float) -> None:
    assert _violations(_request(1.0, bad)) == [("candidates[1].reranker_score", f"must be finite, got {bad}")]


@pytest.mark.parametrize("bad", [math.inf, -math.inf])
def test_an_infinite_column_value_is_refused_naming_the_row(bad: float) -> None:
    req = to_columnar(_request(1.0, 2.0, bad))
    assert _violations(req) == [("columns.reranker_scores[2]", f"must be finite, got {bad}")]


def test_a_column_of_the_wrong_length_is_refused() -> None:
    req = to_columnar(_request(1.0, 2.0))
    req.columns.reranker_scores.append(3.0)
    assert _violations(req) == [("columns.reranker_scores", "3 values; one per id (2) or none")]


def test_any_finite_value_is_taken_on_any_scale() -> None:
    validate_rank_request(_request(-1e300, 0.0, 1e300, 5e-324), SETTINGS.limits)


def test_the_batch_carries_the_scores_nan_where_unset_in_either_form() -> None:
    req = _request(2.5, None, -0.75)
    for form in (req, to_columnar(req)):
        batch, _ = request_to_domain(form, 0.0)
        assert batch.reranker is not None
        assert np.isnan(batch.reranker[1]) and batch.reranker[[0, 2]].tolist() == [2.5, -0.75]
    columnar = to_columnar(req)
    columnar.columns.reranker_scores[0] = math.nan  # NaN in the column: no score
    batch, _ = request_to_domain(columnar, 0.0)
    assert batch.reranker is not None and np.isnan(batch.reranker[:2]).all()


def test_no_score_anywhere_is_no_column() -> None:
    req = _request(None, None)
    assert request_to_domain(req, 0.0)[0].reranker is None
    assert request_to_domain(to_columnar(req), 0.0)[0].reranker is None


def _answer(req: pb.RankRequest) -> bytes:
    return handle_rank(RankInput(req), Policy.of(SETTINGS), Call(1.767e9, b"p", b"k")).SerializeToString()


def test_either_form_gives_the_same_bytes() -> None:
    req = _request(3.0, None, -1.0, 0.5)
    assert _answer(req) == _answer(to_columnar(req))


def test_a_profile_that_does_not_weigh_it_gives_the_same_bytes_with_or_without_scores() -> None:
    with_scores, without = _request(3.0, None, -1.0, 0.5, profile="default"), _request(*[None] * 4, profile="default")
    assert _answer(with_scores) != b"" and _answer(with_scores) == _answer(without)
