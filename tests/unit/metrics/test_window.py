"""The sliding-window drift tracker: reference first, then a ring of the latest values."""

from __future__ import annotations

import numpy as np
import pytest

from memrank.metrics.drift import BIN_COUNT, bin_counts, js, psi
from memrank.metrics.window import DriftTracker


def test_no_reading_until_reference_and_window_are_full() -> None:
    t = DriftTracker(window_size=10, reference_size=20)
    assert t.update("default", "relevance", np.full(25, 0.3)) is None  # 20 to reference, 5 to window
    reading = t.update("default", "relevance", np.full(5, 0.3))
    assert reading is not None
    assert reading.psi == pytest.approx(0.0, abs=1e-12)


def test_reference_is_the_first_values_and_later_values_never_change_it() -> None:
    t = DriftTracker(window_size=10, reference_size=4)
    t.update("p", "s", np.array([0.05, 0.15, 0.15, 0.95, 0.55, 0.55]))
    t.update("p", "s", np.full(50, 0.99))
    ref = t.reference("p", "s")
    assert ref is not None
    assert ref.tolist() == bin_counts(np.array([0.05, 0.15, 0.15, 0.95])).tolist()


def test_window_slides_old_values_out() -> None:
    t = DriftTracker(window_size=10, reference_size=10)
    t.update("p", "s", np.full(10, 0.05))  # reference: all in bin 0
    shifted = t.update("p", "s", np.full(10, 0.95))
    assert shifted is not None and shifted.psi > 0.25
    back = t.update("p", "s", np.full(10, 0.05))  # the shifted values have left the window
    assert back is not None and back.psi == pytest.approx(0.0, abs=1e-12)


def test_partial_slide_matches_a_direct_computation() -> None:
    t = DriftTracker(window_size=8, reference_size=8)
    rng = np.random.default_rng(7)
    ref = rng.uniform(0, 0.5, 8)
    t.update("p", "s", ref)
    stream = rng.uniform(0, 1, 13)
    reading = None
    for chunk in np.array_split(stream, 5):  # uneven chunks wrap the ring at different places
        reading = t.update("p", "s", chunk)
    assert reading is not None
    window = stream[-8:]
    assert reading.psi == pytest.approx(psi(bin_counts(ref), bin_counts(window)), rel=1e-12)
    assert reading.js == pytest.approx(js(bin_counts(ref), bin_counts(window)), rel=1e-12)


def test_a_given_reference_is_used_at_once_and_kept() -> None:
    given = np.zeros(BIN_COUNT, np.int64)
    given[9] = 100
    t = DriftTracker(window_size=5, reference_size=1000, references={("p", "s"): given})
    reading = t.update("p", "s", np.full(5, 0.95))
    assert reading is not None and reading.psi == pytest.approx(0.0, abs=1e-12)
    other = t.update("p", "other-signal", np.full(5, 0.95))
    assert other is None  # keys absent from the file fall back to the first reference_size values


def test_keys_are_independent() -> None:
    t = DriftTracker(window_size=5, reference_size=5)
    t.update("a", "s", np.full(5, 0.05))
    t.update("b", "s", np.full(5, 0.95))
    ra = t.update("a", "s", np.full(5, 0.95))
    rb = t.update("b", "s", np.full(5, 0.95))
    assert ra is not None and rb is not None
    assert ra.psi > 1.0 and rb.psi == pytest.approx(0.0, abs=1e-12)


def test_sizes_must_be_positive() -> None:
    with pytest.raises(ValueError, match="window_size"):
        DriftTracker(0, 5)
