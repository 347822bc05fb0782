import math

import numpy as np
import pytest

from memrank.core.signals.lexical import lexical
from memrank.core.signals.relevance import relevance, retrieval
from tests.support.build import batch, ctx, profile, run

NAN = math.nan


def _facets():
    return batch(
        {"retrieval_score": 0.3, "facet_scores": {"bm25": 2.0, "dense": 0.9}},
        {"retrieval_score": 0.6, "facet_scores": {"bm25": 5.0, "dense": 0.1}},
        {"retrieval_score": 0.9, "facet_scores": {"dense": 0.4}},
    )


def test_no_facets_means_retrieval_score():
    b = batch({"retrieval_score": 0.3}, {"retrieval_score": 0.7})
    assert run(relevance, b).values.tolist() == [0.3, 0.7]
    assert run(retrieval, b).values.tolist() == [0.3, 0.7]


def test_max_fusion_takes_the_largest_facet_clipped_to_one_and_names_it():
    # bm25 2.0 and 5.0 are beyond the [0, 1] scale max compares on: clipped to 1 (c0: max(1, 0.9); c1:
    # max(1, 0.1); c2 has dense 0.4 only).
    got = run(relevance, _facets(), p=profile(fusion="max"))
    assert got.values.tolist() == [1.0, 1.0, 0.4]
    assert [r[0].rsplit(": ", 1)[1] for r in got.reasons] == ["bm25", "bm25", "dense"]


def test_rrf_fusion_sums_reciprocal_ranks_with_k_60():
    got = run(relevance, _facets(), p=profile(fusion="rrf"))
    # bm25 ranks: c1 (5.0) 1, c0 (2.0) 2; dense ranks: c0 (0.9) 1, c2 (0.4) 2, c1 (0.1) 3
    expected = [1 / (60 + 2) + 1 / (60 + 1), 1 / (60 + 1) + 1 / (60 + 3), 1 / (60 + 2)]
    assert got.values == pytest.approx(expected, abs=1e-15)
    assert got.reasons[0][0].endswith("strongest facet: dense")
    assert got.reasons[1][0].endswith("strongest facet: bm25")


def test_rrf_ties_go_to_input_order_and_gated_candidates_do_not_take_ranks():
    b = batch({"facet_scores": {"dense": 0.5}}, {"facet_scores": {"dense": 0.5}}, {"facet_scores": {"dense": 0.9}})
    got = run(relevance, b, p=profile(fusion="rrf"))
    assert got.values == pytest.approx([1 / (60 + 2), 1 / (60 + 3), 1 / (60 + 1)], abs=1e-15)
    gated = run(relevance, b, p=profile(fusion="rrf"), population=np.array([True, True, False]))
    assert gated.values == pytest.approx([1 / (60 + 1), 1 / (60 + 2), 0.0], abs=1e-15)


def test_weighted_fusion_is_a_weighted_mean_of_min_max_facets():
    got = run(relevance, _facets(), p=profile(fusion="weighted", facet_weights={"bm25": 2.0}))
    # bm25 min-max over c0, c1: [0, 1]; dense over all: [(0.9-0.1)/0.8, 0, (0.4-0.1)/0.8]; missing = 0
    expected = [(2.0 * 0.0 + 1.0 * 1.0) / 3, (2.0 * 1.0 + 1.0 * 0.0) / 3, (0.0 + 1.0 * (0.4 - 0.1) / 0.8) / 3]
    assert got.values == pytest.approx(expected, abs=1e-15)


def test_a_candidate_without_any_facet_gets_zero():
    b = batch({"retrieval_score": 0.8}, {"retrieval_score": 0.1, "facet_scores": {"dense": 0.4}})
    for fusion in ("max", "weighted", "rrf"):
        got = run(relevance, b, p=profile(fusion=fusion))
        assert got.values[0] == 0.0
        assert got.reasons[0] == ("no facet scores: 0",)


def test_lexical_blend_mixes_lexical_into_relevance():
    b = batch({"retrieval_score": 0.6, "content": "python parser"}, {"retrieval_score": 0.2, "content": "other"})
    c = ctx("python parser")
    lex = run(lexical, b, c).values
    got = run(relevance, b, c, p=profile(lexical_blend=0.5))
    assert got.values.tolist() == [0.5 * 0.6 + 0.5 * lex[0], 0.5 * 0.2 + 0.5 * lex[1]]
    assert lex.tolist() == [1.0, 0.0]
