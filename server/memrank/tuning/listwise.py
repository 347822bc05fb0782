"""A listwise linear fit: softmax cross-entropy over each query's candidates (``tune --model linear``). Pure numpy.

The model is the same as coordinate ascent's, ``score = sum_s w_s x normalised_s``
with ``w_s >= 0``, so its output is an ordinary profile. Instead of searching a
grid on one metric, it minimises, over the queries with a relevant candidate,
the cross-entropy between the softmax of the eligible candidates' scores and
the relevant candidates' share of the grades (ListNet, Cao et al. 2007, with
the top-one target)::

    loss = sum_q c_q x -sum_i y_qi log softmax(s_q)_i  /  sum_q c_q  +  l2/2 x |w|^2

(``y_qi`` = grade_i / sum of the query's grades over its eligible candidates;
``c_q`` a per-query weight, 1 unless the caller balances datasets). Every
candidate's score moves, not only the few that cross the cut-off, so the fit
is smooth and uses each label; the weights' scale is the softmax's inverse
temperature, free to grow, and only their ratios reach the profile.

Minimised by Adam (Kingma and Ba 2015; rate, betas 0.9/0.999, epsilon 1e-8)
from every weight at ``start / signals``, with the weights clipped at 0 after
each step, for a fixed number of full-batch steps: deterministic, no seed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from memrank.tuning.dataset import Stack


@dataclass(frozen=True)
class LinearSettings:
    """Adam steps, rate, L2 penalty and the starting scale (sum of the weights at the start)."""

    steps: int = 300
    rate: float = 0.05
    l2: float = 1e-3
    start: float = 5.0


DEFAULT_LINEAR = LinearSettings()


def _targets(stack: Stack) -> tuple[np.ndarray, np.ndarray]:
    """Each query's target distribution over its eligible candidates, and which queries have one."""
    gains = np.where(stack.eligible, np.maximum(stack.grades, 0.0), 0.0)
    total = gains.sum(axis=1)
    has = total > 0
    y = np.divide(gains, total[:, None], out=np.zeros_like(gains), where=has[:, None])
    return y, has


def loss_and_gradient(stack: Stack, weights: np.ndarray, query_weights: np.ndarray,
                      l2: float) -> tuple[float, np.ndarray]:
    """The loss above and its gradient in the weights."""
    y, has = _targets(stack)
    c = np.where(has, query_weights, 0.0)
    total = float(c.sum())
    if total <= 0:
        return 0.0, l2 * weights
    s = np.tensordot(weights, stack.features, axes=1)  # (queries, width)
    s = np.where(stack.eligible, s, -np.inf)
    top = np.max(np.where(stack.eligible, s, -np.inf), axis=1, initial=-np.inf)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.where(stack.eligible, np.exp(s - top[:, None]), 0.0)
    z = e.sum(axis=1)
    p = np.divide(e, z[:, None], out=np.zeros_like(e), where=z[:, None] > 0)
    logp = np.where(y > 0, np.log(np.where(y > 0, p, 1.0)), 0.0)
    loss = float(-(c * (y * logp).sum(axis=1)).sum() / total + 0.5 * l2 * float(weights @ weights))
    grad = np.einsum("sqw,qw->s", stack.features, c[:, None] * (p - y)) / total + l2 * weights
    return loss, grad


def fit_linear(stack: Stack, query_weights: np.ndarray | None = None, settings: LinearSettings = DEFAULT_LINEAR,
               tick: Callable[[], object] | None = None) -> np.ndarray:
    """Non-negative weights (their scale is meaningless: pass them to ``ascent.to_simplex``)."""
    signals = stack.features.shape[0]
    c = np.ones(stack.size) if query_weights is None else np.asarray(query_weights, dtype=np.float64)
    w = np.full(signals, settings.start / max(signals, 1))
    m, v = np.zeros(signals), np.zeros(signals)
    b1, b2, eps = 0.9, 0.999, 1e-8
    for t in range(1, settings.steps + 1):
        _, g = loss_and_gradient(stack, w, c, settings.l2)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        w = np.maximum(0.0, w - settings.rate * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps))
        if tick is not None:
            tick()
    return w


def balanced(groups: Sequence[str]) -> np.ndarray:
    """Per-query weights giving every group (e.g. dataset) the same total weight."""
    names, inverse, counts = np.unique(np.asarray(groups), return_inverse=True, return_counts=True)
    return (1.0 / (counts[inverse] * len(names))).astype(np.float64)
