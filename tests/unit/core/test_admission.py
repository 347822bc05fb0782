from dataclasses import replace

import pytest

from memrank.core.admission import score_admission
from memrank.core.types import AdmissionDecision, DropReason, Safety, Source
from tests.support.build import HOUR, REF, batch, ctx, profile

ADM = profile("lians-admission")
GOOD = {"content": "I prefer window seats on flights with Lufthansa since 2019", "source": int(Source.USER_PROVIDED),
        "created_at": REF - HOUR, "event_time": REF - HOUR, "metadata": {"topic": "travel"}}


def test_score_is_the_weighted_sum_and_decides_by_threshold():
    r = score_admission(batch(GOOD), ctx(), ADM)
    raw = {c.name: float(c.raw[0]) for c in r.signals}
    expected = (0.25 * raw["importance"] + 0.20 * raw["stability"] + 0.20 * raw["confidence"] + 0.15 * raw["trust"]
                + 0.15 * raw["safety"] + 0.05 * raw["freshness"])
    # importance by memrank's cue rules: no caller value (b = 0), one cue, constraint 0.30 ("i prefer").
    assert raw["importance"] == 0 + (1 - 0) * (1 - (1 - 0.30)) and raw["trust"] == 0.75 and raw["safety"] == 1.0
    assert r.score == pytest.approx(expected, abs=1e-12)
    assert r.decision == AdmissionDecision.ADMIT and r.score >= ADM.admit_threshold
    held = score_admission(batch(GOOD), ctx(), replace(ADM, admit_threshold=0.99))
    assert held.decision == AdmissionDecision.HOLD and held.reasons[0].startswith("held")
    rejected = score_admission(batch(GOOD), ctx(), replace(ADM, admit_threshold=0.99, hold_threshold=0.98))
    assert rejected.decision == AdmissionDecision.REJECT


def test_gated_memories_are_rejected_with_the_reason():
    r = score_admission(batch({**GOOD, "safety": int(Safety.QUARANTINED)}), ctx(), ADM)
    assert r.decision == AdmissionDecision.REJECT and r.gate == DropReason.SAFETY_GATED
    assert r.reasons[:2] == ("rejected: gated (SAFETY_GATED)", "safety gated: status QUARANTINED: 0")
    # lians-admission follows its seed: no zero-importance gate; a profile that has one rejects by it.
    assert score_admission(batch({"content": "thanks!"}), ctx(), ADM).gate == DropReason.KEPT
    gating = replace(ADM, gate_zero_importance=True)
    assert score_admission(batch({"content": "thanks!"}), ctx(), gating).gate == DropReason.ZERO_IMPORTANCE
    assert score_admission(batch({**GOOD, "valid_to": REF}), ctx(), ADM).gate == DropReason.EXPIRED


def test_future_events_are_not_a_gate_at_admission():
    r = score_admission(batch({**GOOD, "event_time": REF + 24 * HOUR, "valid_from": REF + HOUR}), ctx(), ADM)
    assert r.gate == DropReason.KEPT and r.decision in (AdmissionDecision.ADMIT, AdmissionDecision.HOLD)
    assert "event_time after the reference time: not a gate for admission" in r.reasons
    assert "valid_from after the reference time: not a gate for admission" in r.reasons


def test_reserved_metadata_keys_are_ignored_and_named():
    plain = score_admission(batch({**GOOD, "metadata": {}}), ctx(), ADM)
    reserved = score_admission(batch({**GOOD, "metadata": {"_trust": "1.0", "_admit": "yes"}}), ctx(), ADM)
    assert reserved.score == plain.score
    assert "reserved metadata keys ignored: _admit, _trust" in reserved.reasons


def test_a_batch_of_one_is_required():
    with pytest.raises(ValueError, match="got 2"):
        score_admission(batch(GOOD, GOOD), ctx(), ADM)
