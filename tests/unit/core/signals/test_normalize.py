import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memrank.core.errors import ConfigError
from memrank.core.signals.normalizers import (
    NORMALIZERS,
    min_max,
    none,
    normalize,
    normalize_columns,
    percentile_rank,
    z_score,
)

ALL = np.ones(3, dtype=bool)


def test_min_max_formula():
    got = min_max(np.array([1.0, 2.0, 4.0]), ALL)
    assert got.tolist() == [0.0, (2 - 1) / (4 - 1), 1.0]


def test_min_max_constant_is_half_and_population_excludes_outliers():
    assert min_max(np.array([3.0, 3.0, 3.0]), ALL).tolist() == [0.5, 0.5, 0.5]
    got = min_max(np.array([0.0, 1.0, 100.0]), np.array([True, True, False]))
    assert got.tolist() == [0.0, 1.0, 0.0]


def test_z_score_is_the_logistic_of_the_population_z():
    v = np.array([1.0, 2.0, 3.0])
    std = math.sqrt(((1 - 2) ** 2 + 0 + (3 - 2) ** 2) / 3)
    expected = [1 / (1 + math.exp(-(x - 2) / std)) for x in v]
    assert np.allclose(z_score(v, ALL), expected, atol=1e-15)
    assert z_score(np.array([5.0, 5.0, 5.0]), ALL).tolist() == [0.5, 0.5, 0.5]


def test_rank_averages_ties_and_scales_to_unit():
    v = np.array([10.0, 20.0, 20.0, 30.0])
    assert percentile_rank(v, np.ones(4, dtype=bool)).tolist() == [0 / 3, 1.5 / 3, 1.5 / 3, 3 / 3]
    assert percentile_rank(np.array([7.0]), np.ones(1, dtype=bool)).tolist() == [0.5]


def test_none_passes_through_inside_the_population_only():
    assert none(np.array([0.2, 7.0, 0.4]), np.array([True, True, False])).tolist() == [0.2, 7.0, 0.0]


@pytest.mark.parametrize("name", sorted(NORMALIZERS))
def test_empty_in_empty_out(name):
    assert normalize(name, np.array([]), np.array([], dtype=bool)).shape == (0,)


@pytest.mark.parametrize("name", sorted(NORMALIZERS))
def test_nothing_in_the_population_gives_zeros(name):
    assert normalize(name, np.array([1.0, 2.0]), np.zeros(2, dtype=bool)).tolist() == [0.0, 0.0]


def test_unknown_normalizer_is_named():
    with pytest.raises(ConfigError, match="'softmax'"):
        normalize("softmax", np.array([1.0]), np.array([True]))


@given(
    st.lists(st.tuples(st.floats(allow_nan=True, allow_infinity=True), st.booleans()), max_size=40),
    st.sampled_from(["min_max", "z_score", "rank"]),
)
def test_bounded_normalizers_stay_in_unit_interval_and_never_nan(rows, name):
    values = np.array([v for v, _ in rows], dtype=np.float64)
    mask = np.array([m for _, m in rows], dtype=bool)
    out = normalize(name, values, mask)
    assert out.shape == values.shape
    assert np.all(np.isfinite(out))
    assert np.all((out >= 0.0) & (out <= 1.0))
    assert np.all(out[~mask] == 0.0)


@given(st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=30))
def test_min_max_and_rank_keep_the_order(xs):
    v = np.array(xs)
    for fn in (min_max, percentile_rank, z_score):
        out = fn(v, np.ones(len(xs), dtype=bool))
        for i in range(len(xs)):
            for j in range(len(xs)):
                if xs[i] < xs[j]:
                    assert out[i] <= out[j]


@given(st.integers(0, 6).flatmap(lambda n: st.tuples(
    st.lists(st.tuples(st.sampled_from(sorted(NORMALIZERS)),
                       st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=n, max_size=n)),
             max_size=5),
    st.lists(st.booleans(), min_size=n, max_size=n))))
def test_normalize_columns_is_each_column_normalised_alone(case):
    columns, population = case
    mask = np.array(population, dtype=bool)
    names = [name for name, _ in columns]
    values = [np.array(v, dtype=np.float64) for _, v in columns]
    out = normalize_columns(names, values, mask)
    assert out.shape == (len(names), len(population)) and out.dtype == np.float64
    for row, name, v in zip(out, names, values, strict=True):
        assert row.tobytes() == normalize(name, v, mask).tobytes()


def test_normalize_columns_names_an_unknown_normalizer():
    with pytest.raises(ConfigError, match="nope"):
        normalize_columns(["none", "nope"], [np.zeros(2), np.zeros(2)], np.ones(2, dtype=bool))
