"""The listwise fit (``tune --model linear``): its loss and gradient from the formula, and what it learns."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memrank.tuning.dataset import Query, Stack
from memrank.tuning.listwise import LinearSettings, balanced, fit_linear, loss_and_gradient


def _query(features: list[list[float]], grades: list[float], eligible: list[bool] | None = None) -> Query:
    n = len(grades)
    return Query(key="q", group="g", features=np.array(features, dtype=np.float64),
                 eligible=np.array(eligible if eligible is not None else [True] * n),
                 grades=np.array(grades, dtype=np.float64), tokens=np.ones(n, dtype=np.int64),
                 outside=np.zeros(0))


def test_loss_worked_by_hand():
    # One signal, three candidates with values 1, 0, 0; candidate 0 relevant. w = ln 2: scores ln 2, 0, 0,
    # softmax = 2/4, 1/4, 1/4 -> loss = -ln(1/2) = ln 2. Gradient = x . (p - y) = 1 x (0.5 - 1) = -0.5.
    stack = Stack.of([_query([[1.0, 0.0, 0.0]], [1.0, 0.0, 0.0])], 1)
    loss, grad = loss_and_gradient(stack, np.array([math.log(2)]), np.ones(1), 0.0)
    assert loss == pytest.approx(math.log(2), abs=1e-12)
    assert grad.tolist() == pytest.approx([-0.5], abs=1e-12)


def test_gated_candidates_take_no_share_and_grades_split_the_target():
    # Candidate 2 is gated: softmax over candidates 0 and 1 only. Grades 1 and 3: target 1/4, 3/4.
    # w = 0: p = 1/2, 1/2; loss = -(1/4 ln 1/2 + 3/4 ln 1/2) = ln 2; gradient = x . (p - y)
    # = 1 x (1/2 - 1/4) + 0 x (1/2 - 3/4) = 1/4.
    stack = Stack.of([_query([[1.0, 0.0, 5.0]], [1.0, 3.0, 9.0], [True, True, False])], 1)
    loss, grad = loss_and_gradient(stack, np.zeros(1), np.ones(1), 0.0)
    assert loss == pytest.approx(math.log(2), abs=1e-12)
    assert grad.tolist() == pytest.approx([0.25], abs=1e-12)


def test_gradient_matches_finite_differences_with_l2_and_query_weights():
    rng = np.random.default_rng(3)
    qs = [_query(rng.random((3, 7)).tolist(), (rng.random(7) > 0.7).astype(float).tolist()) for _ in range(5)]
    qs.append(_query(rng.random((3, 4)).tolist(), [0.0] * 4))  # nothing relevant: no part in the loss
    stack = Stack.of(qs, 3)
    c = np.array([1.0, 2.0, 0.5, 1.0, 3.0, 1.0])
    w = np.array([0.7, 1.3, 0.2])
    _, grad = loss_and_gradient(stack, w, c, 0.01)
    h = 1e-6
    for j in range(3):
        e = np.zeros(3)
        e[j] = h
        up, _ = loss_and_gradient(stack, w + e, c, 0.01)
        down, _ = loss_and_gradient(stack, w - e, c, 0.01)
        assert grad[j] == pytest.approx((up - down) / (2 * h), abs=1e-6)


def test_the_fit_puts_weight_on_the_signal_that_separates_and_none_on_noise():
    # Signal 0 is 1 exactly on the relevant candidate; signal 1 is noise; signal 2 is 1 exactly on an
    # irrelevant one. The fit must rank by signal 0: weight 0 > the others, signal 2 driven to 0.
    rng = np.random.default_rng(0)
    qs = []
    for _ in range(40):
        n = 10
        rel = int(rng.integers(n))
        bad = (rel + 1 + int(rng.integers(n - 1))) % n
        f = np.zeros((3, n))
        f[0, rel] = 1.0
        f[1] = rng.random(n)
        f[2, bad] = 1.0
        g = np.zeros(n)
        g[rel] = 1.0
        qs.append(_query(f.tolist(), g.tolist()))
    w = fit_linear(Stack.of(qs, 3), settings=LinearSettings(steps=200))
    assert w[0] > 5 * max(w[1], w[2])
    assert w[2] == 0.0
    assert (w >= 0).all()


def test_the_fit_is_deterministic_and_balanced_weights_give_each_group_one_share():
    rng = np.random.default_rng(1)
    qs = [_query(rng.random((2, 6)).tolist(), [1.0, 0, 0, 0, 0, 0]) for _ in range(6)]
    stack = Stack.of(qs, 2)
    assert fit_linear(stack).tolist() == fit_linear(stack).tolist()
    c = balanced(["a", "a", "a", "b", "a", "a"])
    assert c.tolist() == pytest.approx([0.1, 0.1, 0.1, 0.5, 0.1, 0.1])
