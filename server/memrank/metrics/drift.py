"""Drift statistics over binned distributions: PSI and Jensen-Shannon. Pure numpy.

Both compare a reference histogram with a current one, bin by bin, on the same
edges as ``memrank_signal_value`` (so a reference taken from /metrics and one
taken in process agree):

- PSI = sum_i (q_i - p_i) * ln(q_i / p_i), p = reference shares, q = current
  shares, each share floored at ``PSI_FLOOR`` so an empty bin stays finite.
  Rule of thumb: < 0.1 stable, 0.1-0.25 watch, >= 0.25 act.
- JS = 1/2 KL(p || m) + 1/2 KL(q || m), m = (p + q) / 2, log base 2: a
  divergence in [0, 1] (0 = same distribution, 1 = disjoint supports).
"""

from __future__ import annotations

import numpy as np

# Upper bounds of memrank_signal_value's finite buckets; +Inf is the last bin.
SIGNAL_BUCKETS: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
BIN_COUNT = len(SIGNAL_BUCKETS) + 1
# The same floor as the fleet-wide recording rule (clamp_min(share, 1e-4)).
PSI_FLOOR = 1e-4
PSI_WATCH = 0.1
PSI_ACT = 0.25


def bin_index(values: np.ndarray, bounds: tuple[float, ...] = SIGNAL_BUCKETS) -> np.ndarray:
    """The bin of each value, as Prometheus places it (first bound >= value; past the last = +Inf bin)."""
    return np.searchsorted(np.asarray(bounds, dtype=np.float64), values, side="left").astype(np.int64)


_BOUNDS = np.asarray(SIGNAL_BUCKETS, dtype=np.float64)
# From this many values on, one comparison per bound beats a binary search per value.
_COMPARE_FROM = 256


def fast_bin_index(values: np.ndarray) -> np.ndarray:
    """``bin_index`` on SIGNAL_BUCKETS for finite and infinite values (int8; a NaN's bin is unspecified).

    A value's bin is the number of bounds below it, which is where Prometheus places it (first bound >= value);
    counted with one vectorised comparison per bound on large arrays (fewer instructions than a binary search per
    value), searched on small ones (fewer numpy calls)."""
    if values.size < _COMPARE_FROM:
        return np.searchsorted(_BOUNDS, values, side="left").astype(np.int8)
    out = np.zeros(values.shape, np.int8)
    for bound in SIGNAL_BUCKETS:
        out += values > bound
    return out


def bin_counts(values: np.ndarray, bounds: tuple[float, ...] = SIGNAL_BUCKETS) -> np.ndarray:
    """Non-cumulative counts per bin (len(bounds) + 1 of them); NaN values are ignored."""
    values = np.asarray(values, dtype=np.float64)
    values = values[~np.isnan(values)]
    return np.bincount(bin_index(values, bounds), minlength=len(bounds) + 1).astype(np.int64)


def shares(counts: np.ndarray) -> np.ndarray:
    """Counts as shares of their total (all zeros when the total is 0)."""
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum()
    return counts / total if total > 0 else np.zeros_like(counts)


def psi(reference: np.ndarray, current: np.ndarray, floor: float = PSI_FLOOR) -> float:
    """Population stability index of ``current`` against ``reference`` (bin counts or shares)."""
    return psi_of_shares(np.maximum(shares(reference), floor), shares(current), floor)


def psi_of_shares(p: np.ndarray, q: np.ndarray, floor: float = PSI_FLOOR) -> float:
    """``psi`` from the reference's shares already floored (``p``) and the current shares (``q``)."""
    q = np.maximum(q, floor)
    return float(np.sum((q - p) * np.log(q / p)))


def _kl2(a: np.ndarray, b: np.ndarray) -> float:
    mask = a > 0  # 0 * log 0 = 0; b > 0 wherever a > 0 because b is a mixture containing a
    return float(np.sum(a[mask] * np.log2(a[mask] / b[mask])))


def js(reference: np.ndarray, current: np.ndarray) -> float:
    """Jensen-Shannon divergence (base 2, in [0, 1]) between two binned distributions."""
    return js_of_shares(shares(reference), shares(current))


def js_of_shares(p: np.ndarray, q: np.ndarray) -> float:
    """``js`` from the two distributions' shares."""
    m = (p + q) / 2.0
    return min(1.0, max(0.0, 0.5 * _kl2(p, m) + 0.5 * _kl2(q, m)))
