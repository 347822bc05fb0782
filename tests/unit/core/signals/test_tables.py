import math

import pytest

from memrank.core.errors import ConfigError
from memrank.core.signals import SIGNALS, get_signal
from memrank.core.signals.access import access, access_log
from memrank.core.signals.kind_prior import kind_prior
from tests.support.build import batch, profile, run


def test_kind_prior_table_is_case_sensitive():
    kinds = ["decision", "fact", "preference", "failure", "attempt", "Decision", "note", ""]
    got = run(kind_prior, batch(*({"kind": k} for k in kinds)))
    assert got.values.tolist() == [0.35, 0.30, 0.25, 0.20, 0.05, 0.0, 0.0, 0.0]
    assert got.reasons[5] == ("kind 'Decision' not in the prior table: 0",)


def test_kind_prior_table_is_configurable():
    got = run(kind_prior, batch({"kind": "goal"}, {"kind": "fact"}), p=profile(kind_prior={"goal": 0.4}))
    assert got.values.tolist() == [0.4, 0.0]


def test_access_bonus_of_the_go_scorer():
    got = run(access, batch(*({"access_count": c} for c in (0, 3, 5, 200))))
    assert got.values.tolist() == [0.0, min(3 / 50, 0.10), 0.10, 0.10]


def test_log_shaped_access_bonus_saturates_at_fifty():
    got = run(access_log, batch(*({"access_count": c} for c in (0, 1, 7, 50, 10_000))))
    assert got.values == pytest.approx([0.0, math.log(2) / math.log(51), math.log(8) / math.log(51), 1.0, 1.0],
                                       abs=1e-15)


def test_registry_names_unknown_signals():
    assert get_signal("recency") is SIGNALS["recency"]
    with pytest.raises(ConfigError, match="'sentiment'"):
        get_signal("sentiment")


def test_the_package_binds_its_submodules_not_functions_of_their_names() -> None:
    """``memrank.core.signals.importance`` is the module, whatever was imported first: the registry names its
    functions through their modules instead of binding ``importance`` (the cue rules' function) over the
    module of the same name."""
    import types

    import memrank.core.signals as signals

    for name in ("importance", "lexical", "safety", "importance_cues", "relevance"):
        assert isinstance(getattr(signals, name), types.ModuleType), name
    assert SIGNALS["importance"] is signals.importance_cues.importance
