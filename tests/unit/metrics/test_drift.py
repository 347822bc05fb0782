"""PSI and Jensen-Shannon over binned distributions: expected values written as the formula."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memrank.metrics.drift import (
    BIN_COUNT,
    PSI_FLOOR,
    SIGNAL_BUCKETS,
    bin_counts,
    bin_index,
    fast_bin_index,
    js,
    psi,
)


def test_bins_follow_prometheus_le_placement() -> None:
    # A value equal to a bound belongs to that bound's bucket (value <= le); above 1.0 is the +Inf bin.
    values = np.array([-1.0, 0.0, 0.1, 0.1000001, 0.95, 1.0, 1.5, math.inf])
    assert bin_index(values).tolist() == [0, 0, 0, 1, 9, 9, 10, 10]
    assert len(SIGNAL_BUCKETS) + 1 == BIN_COUNT


def test_bin_counts_ignore_nan_and_have_every_bin() -> None:
    counts = bin_counts(np.array([0.05, 0.05, 0.55, math.nan]))
    assert counts.shape == (BIN_COUNT,)
    assert counts[0] == 2 and counts[5] == 1 and counts.sum() == 3


def test_identical_distributions_have_zero_drift() -> None:
    ref = np.array([5, 10, 0, 3, 0, 0, 0, 0, 0, 0, 2])
    assert psi(ref, ref * 7) == pytest.approx(0.0, abs=1e-12)
    assert js(ref, ref * 7) == pytest.approx(0.0, abs=1e-12)


def test_psi_is_the_textbook_sum() -> None:
    ref = np.array([50, 50] + [0] * 9)
    cur = np.array([20, 80] + [0] * 9)
    expected = (0.2 - 0.5) * math.log(0.2 / 0.5) + (0.8 - 0.5) * math.log(0.8 / 0.5)
    assert psi(ref, cur) == pytest.approx(expected, rel=1e-12)


def test_psi_floors_empty_bins_so_disjoint_supports_stay_finite() -> None:
    ref = np.array([1] + [0] * 10)
    cur = np.array([0] * 10 + [1])
    one_side = (1 - PSI_FLOOR) * math.log(1 / PSI_FLOOR)
    assert psi(ref, cur) == pytest.approx(2 * one_side, rel=1e-12)


def test_js_is_half_the_kl_to_the_mixture_in_bits() -> None:
    ref = np.array([50, 50] + [0] * 9)
    cur = np.array([20, 80] + [0] * 9)
    p, q = np.array([0.5, 0.5]), np.array([0.2, 0.8])
    m = (p + q) / 2
    expected = 0.5 * float(np.sum(p * np.log2(p / m))) + 0.5 * float(np.sum(q * np.log2(q / m)))
    assert js(ref, cur) == pytest.approx(expected, rel=1e-12)
    assert js(ref, cur) == pytest.approx(js(cur, ref), rel=1e-12)  # symmetric


def test_js_of_disjoint_supports_is_one_bit() -> None:
    assert js(np.array([3] + [0] * 10), np.array([0] * 10 + [4])) == pytest.approx(1.0)


def test_empty_inputs_give_defined_values() -> None:
    zeros = np.zeros(BIN_COUNT)
    assert math.isfinite(psi(zeros, zeros))
    assert js(zeros, zeros) == 0.0


@pytest.mark.parametrize("shape", [(3,), (2, 40), (20, 400)])  # below and above the size that switches method
def test_fast_bins_count_the_bounds_below_each_value(shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(2)
    values = rng.choice([*SIGNAL_BUCKETS, -0.5, 0.0, 1.7, math.inf, -math.inf], size=shape)
    mixed = rng.uniform(size=shape) < 0.5
    values[mixed] = rng.uniform(-0.2, 1.2, size=int(mixed.sum()))
    want = np.vectorize(lambda v: sum(1 for b in SIGNAL_BUCKETS if b < v))(values)
    assert fast_bin_index(values).tolist() == want.tolist()
    assert fast_bin_index(values).shape == shape
