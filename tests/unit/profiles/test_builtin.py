import math

import pytest

from memrank.core.errors import ConfigError
from memrank.core.signals import SIGNALS
from memrank.core.types import Placement
from memrank.profiles.builtin import BUILTIN_PROFILES
from memrank.profiles.model import profile_from_mapping

NAMES = {"default", "with-reranker", "agent-observer", "generative-agents", "lians-recall", "lians-admission",
         "support", "assistant", "research"}


def test_every_builtin_profile_exists_and_uses_known_signals():
    assert set(BUILTIN_PROFILES) == NAMES
    for name, p in BUILTIN_PROFILES.items():
        assert p.name == name and p.description
        names = [s.name for s in p.signals]
        assert len(names) == len(set(names)) and set(names) <= set(SIGNALS)


@pytest.mark.parametrize("name", ["default", "with-reranker", "support", "assistant", "research", "lians-admission"])
def test_weights_add_up_to_one(name):
    assert math.fsum(s.weight for s in BUILTIN_PROFILES[name].signals) == pytest.approx(1.0, abs=1e-12)


def test_compatibility_profiles_apply_no_threshold_or_diversity():
    for name in ("agent-observer", "generative-agents", "lians-recall", "lians-admission"):
        p = BUILTIN_PROFILES[name]
        assert p.compatibility and p.relevance_threshold is None and p.diversity_lambda == 1.0
    assert not BUILTIN_PROFILES["agent-observer"].gate_zero_importance
    assert not BUILTIN_PROFILES["generative-agents"].gate_zero_importance
    assert BUILTIN_PROFILES["generative-agents"].recency.floor == 0.0


def test_presets_lead_with_their_signal():
    def top(name):
        return max(BUILTIN_PROFILES[name].signals, key=lambda s: s.weight).name
    assert (top("support"), top("assistant"), top("research")) == ("recency", "importance", "relevance")
    # default's weights come from eval/cv_shapes.py's listwise fit; no signal owns the ranking.
    assert max(s.weight for s in BUILTIN_PROFILES["default"].signals) < 0.5
    d = BUILTIN_PROFILES["default"]
    # The covering set stays on (lambda < 1: near-copies are dropped), chosen by eval/cv_shapes.py.
    assert 0.0 < d.diversity_lambda < 1.0 and d.placement == Placement.BEST_FIRST and d.recency.floor == 0.05
    assert [s.name for s in d.signals] == ["relevance", "lexical", "context", "speaker_pair", "importance", "thread",
                                           "length", "hop", "statement", "date"]
    assert sum(s.weight for s in d.signals) == pytest.approx(1.0, abs=1e-12)
    assert d.lexical_stemmer == "english"


def test_lexical_blend_is_a_validated_profile_key():
    p = profile_from_mapping("profiles.x", {"signals": [{"name": "relevance", "weight": 1}], "lexical_blend": 0.3})
    assert p.lexical_blend == 0.3


def test_share_constant_weight_is_a_strict_boolean_profile_key():
    signals = [{"name": "relevance", "weight": 1}]
    assert profile_from_mapping("profiles.x", {"signals": signals, "share_constant_weight": True}).share_constant_weight
    assert not profile_from_mapping("profiles.x", {"signals": signals}).share_constant_weight
    with pytest.raises(ConfigError, match=r"profiles\.x\.share_constant_weight: expected true or false, got 'yes'"):
        profile_from_mapping("profiles.x", {"signals": signals, "share_constant_weight": "yes"})


@pytest.mark.parametrize(("field", "value"), [("fusion", "rrF"), ("formula", "sum"), ("importance_rules", "rules")])
def test_a_profile_built_in_code_refuses_an_unknown_path_name(field, value):
    # Before, Profile(fusion="rrF") ran as rrf (the branch max and weighted fall through to), and the config
    # reader's check was the only one.
    from memrank.core.profile import Profile, SignalSpec

    with pytest.raises(ValueError, match=f"profile 'p': {field} '{value}' is not one of"):
        Profile(name="p", description="", signals=(SignalSpec("relevance", 1.0),), **{field: value})
    with pytest.raises(ValueError, match=field):
        from dataclasses import replace
        replace(BUILTIN_PROFILES["default"], **{field: value})
