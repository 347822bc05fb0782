"""Which profiles drop zero-importance memories on general recall: memrank's own, never the compatibility ones."""

from __future__ import annotations

import pytest

from memrank.core.admission import score_admission
from memrank.core.scoring.combine import score
from memrank.core.types import AdmissionDecision, DropReason
from memrank.profiles.builtin import BUILTIN_PROFILES
from tests.support.build import batch, ctx, profile

OWN = ("default", "support", "assistant", "research")
COMPATIBILITY = ("agent-observer", "generative-agents", "lians-recall", "lians-admission")


@pytest.mark.parametrize("name", OWN + COMPATIBILITY)
def test_the_gate_belongs_to_memranks_own_profiles(name):
    # "alpha" (one word, no kind) and "Black TEA" (two words) are passing remarks by memrank's rule
    # (fewer than 3 words): importance 0.
    b = batch({"content": "alpha", "retrieval_score": 0.5}, {"content": "Black TEA", "retrieval_score": 0.4})
    gates = score(b, ctx("alpha tea"), profile(name)).gate.tolist()
    expected = DropReason.ZERO_IMPORTANCE if name in OWN else DropReason.KEPT
    assert gates == [expected, expected]
    assert BUILTIN_PROFILES[name].gate_zero_importance is (name in OWN)


def test_lians_admission_scores_a_greeting_instead_of_rejecting_it_at_zero():
    # "hi" under lians-admission, each signal by the README's rules: importance 0 (a greeting), stability 0.1
    # (greeting), confidence 0.30 (nothing specific), trust 0.5 (unknown source), safety 1, freshness 0.1 (no
    # time: the floor). 0.25 x 0 + 0.20 x 0.1 + 0.20 x 0.3 + 0.15 x 0.5 + 0.15 x 1 + 0.05 x 0.1 = 0.31.
    r = score_admission(batch({"content": "hi"}), ctx(""), profile("lians-admission"))
    assert r.gate == DropReason.KEPT
    assert r.score == pytest.approx(0.25 * 0 + 0.20 * 0.1 + 0.20 * 0.3 + 0.15 * 0.5 + 0.15 * 1 + 0.05 * 0.1, abs=1e-12)
    assert r.decision == AdmissionDecision.REJECT  # below the 0.4 hold threshold, by its score, not by a gate
