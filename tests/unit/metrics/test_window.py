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


def test_any_chunking_keeps_the_reference_and_window_of_a_plain_list() -> None:
    """Chunks of every size (empty, wrapping the ring, longer than it) against the definition: the first
    reference_size values are the reference, the last window_size after them the window."""
    rng = np.random.default_rng(11)
    t = DriftTracker(window_size=7, reference_size=9)
    seen: list[float] = []
    for size in (0, 3, 4, 1, 0, 6, 7, 2, 15, 5, 9, 1, 13):
        chunk = rng.uniform(0, 1.2, size)
        seen.extend(chunk.tolist())
        reading = t.update("p", "s", chunk)
        reference, window = np.array(seen[:9]), np.array(seen[9:][-7:])
        assert t.reference("p", "s").tolist() == bin_counts(reference).tolist()  # type: ignore[union-attr]
        if len(seen) < 9 + 7:
            assert reading is None
        else:
            assert reading is not None
            assert reading.psi == psi(bin_counts(reference), bin_counts(window))
            assert reading.js == js(bin_counts(reference), bin_counts(window))


def test_add_rows_is_add_bins_of_each_signal() -> None:
    rng = np.random.default_rng(5)
    one, many = DriftTracker(6, 4), DriftTracker(6, 4)
    for _ in range(5):
        rows = [rng.integers(0, BIN_COUNT, int(rng.integers(0, 5))) for _ in range(3)]
        for name, row in zip("abc", rows, strict=True):
            one.add_bins("p", name, row)
        many.add_rows("p", list("abc"), rows)
    for name in "abc":
        assert one.reading("p", name) == many.reading("p", name)
        assert one.reference("p", name).tolist() == many.reference("p", name).tolist()  # type: ignore[union-attr]


def test_a_kept_reading_is_dropped_once_the_window_changes() -> None:
    t = DriftTracker(window_size=4, reference_size=4)
    t.update("p", "s", np.array([0.05, 0.15, 0.25, 0.35]))
    first = t.update("p", "s", np.full(4, 0.05))
    same = t.update("p", "s", np.full(3, 0.01))  # other values, same bin: the window's counts do not move
    moved = t.update("p", "s", np.array([0.95]))
    reference = bin_counts(np.array([0.05, 0.15, 0.25, 0.35]))
    assert first == same and first is not None
    assert first.psi == psi(reference, bin_counts(np.full(4, 0.05)))
    assert moved is not None and moved.psi == psi(reference, bin_counts(np.array([0.01, 0.01, 0.01, 0.95])))
    assert moved.js == js(reference, bin_counts(np.array([0.01, 0.01, 0.01, 0.95])))
