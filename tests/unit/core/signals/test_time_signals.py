import pytest

from memrank.core.profile import RecencySpec
from memrank.core.signals.freshness import freshness
from memrank.core.signals.recency import recency
from tests.support.build import HOUR, REF, batch, profile, run


def test_recency_decays_from_last_access_falling_back_to_creation():
    b = batch(
        {"last_accessed_at": REF - 10 * HOUR, "created_at": REF - 900 * HOUR},
        {"created_at": REF - 5 * HOUR},
        {"created_at": REF + 3 * HOUR},  # the future counts as 0 hours, never a bonus
        {},
        {"created_at": REF - 10_000 * HOUR},
    )
    got = run(recency, b)
    assert got.values.tolist() == [0.995**10, 0.995**5, 1.0, 0.05, 0.05]
    assert got.reasons[0] == ("0.995^10.00 h since last_accessed_at",)
    assert got.reasons[3] == ("no last_accessed_at or created_at: floor 0.05",)
    assert got.reasons[4][1] == "floor 0.05 applied"


def test_recency_half_life_and_floor_are_configurable():
    b = batch({"created_at": REF - 24 * HOUR}, {"created_at": REF - 1000 * HOUR}, {})
    got = run(recency, b, p=profile(recency=RecencySpec.from_half_life(24.0, floor=0.0)))
    assert got.values[0] == pytest.approx(0.5, abs=1e-12)
    assert got.values[1] == pytest.approx(0.5 ** (1000 / 24), rel=1e-9)
    assert got.values[2] == 0.0


def test_freshness_is_validity_times_a_thirty_day_half_life():
    b = batch(
        {"created_at": REF - 720 * HOUR},
        {"created_at": REF},
        {"ingested_at": REF - 1440 * HOUR},
        {},
        {"created_at": REF - 100_000 * HOUR},
        {"created_at": REF, "valid_to": REF},
        {"created_at": REF, "valid_from": REF + 1},
        {"created_at": REF - 720 * HOUR, "valid_from": REF, "valid_to": REF + 1},
    )
    got = run(freshness, b)
    assert got.values.tolist() == pytest.approx([0.5, 1.0, 0.25, 0.1, 0.1, 0.0, 0.0, 0.5], abs=1e-12)
    assert got.reasons[5] == ("not valid at the reference time: 0",)
