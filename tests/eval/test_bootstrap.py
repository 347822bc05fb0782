"""The paired bootstrap against cases whose interval is known without resampling."""

from __future__ import annotations

import numpy as np
import pytest

from memrank.evaluation.bootstrap import paired


def test_a_constant_difference_has_a_point_interval():
    # Every question differs by exactly +0.25: every resample's mean is 0.25.
    got = paired([0.5, 1.0, 0.25, 0.75], [0.25, 0.75, 0.0, 0.5])
    assert (got.delta, got.low, got.high) == pytest.approx((0.25, 0.25, 0.25))
    assert got.significant


def test_equal_rows_are_not_significant_and_an_empty_row_is_zero():
    same = paired([1.0, 0.0, 0.5], [1.0, 0.0, 0.5])
    assert (same.delta, same.low, same.high) == (0.0, 0.0, 0.0) and not same.significant
    assert paired([], []).as_dict() == {"delta": 0.0, "ci95": [0.0, 0.0], "significant": False}


def test_interval_matches_the_normal_approximation_on_a_large_sample():
    # d = +1 on 30% of 2000 questions, 0 elsewhere: mean 0.3, standard error sqrt(0.3 * 0.7 / 2000) = 0.01025;
    # the 95% percentile interval is close to 0.3 +/- 1.96 x 0.01025 = [0.2799, 0.3201].
    d = np.zeros(2000)
    d[:600] = 1.0
    got = paired(d.tolist(), [0.0] * 2000)
    se = (0.3 * 0.7 / 2000) ** 0.5
    assert got.delta == pytest.approx(0.3)
    assert got.low == pytest.approx(0.3 - 1.96 * se, abs=0.003)
    assert got.high == pytest.approx(0.3 + 1.96 * se, abs=0.003)


def test_the_interval_is_the_same_on_every_run():
    a, b = [1.0, 0.0, 1.0, 0.5, 0.0], [0.0, 0.0, 1.0, 1.0, 0.5]
    assert paired(a, b) == paired(a, b)
