"""Calibration bucket bounds exactly as the README writes them: receipts bind the public scores' bits."""

from __future__ import annotations

import numpy as np
import pytest

from memrank.core.selection.calibrate import calibrate


@pytest.mark.parametrize("k", range(1, 65))
def test_calibration_bounds_are_one_minus_r_over_k(k: int) -> None:
    """README Selection 6: rank r of k owns (1 - r/k, 1 - (r-1)/k], bit for bit (receipts bind the bits; with
    1 - r x (1/k), k = 5 gives 0.3999999999999999 for 1 - 3/5)."""
    b = calibrate(np.linspace(1.0, 0.0, k))
    assert b.upper.tolist() == [1 - r / k for r in range(k)]
    assert b.lower.tolist() == [1 - r / k for r in range(1, k + 1)]
    assert b.score.tolist() == [(1 - r / k) + (1 / k) * (0.1 + 0.8 * p)
                                for r, p in zip(range(1, k + 1), np.linspace(1.0, 0.0, k).tolist(), strict=True)]
