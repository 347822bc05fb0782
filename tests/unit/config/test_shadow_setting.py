"""shadow.profile and shadow.sample_rate: validated with errors naming the key; the profile must exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from memrank.config import ShadowSettings, load_settings
from memrank.core.errors import ConfigError


def test_off_by_default() -> None:
    assert load_settings(env={}).shadow == ShadowSettings(profile=None, sample_rate=1.0)


def test_a_profile_of_the_file_may_be_the_shadow(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("shadow:\n  profile: candidate\n  sample_rate: 0.25\n"
                      "profiles:\n  candidate:\n    base: default\n", encoding="utf-8")
    s = load_settings(str(config), env={})
    assert s.shadow == ShadowSettings("candidate", 0.25)
    assert s.as_dict()["shadow"] == {"profile": "candidate", "sample_rate": 0.25}


def test_the_shadow_does_not_change_the_policy_version() -> None:
    """The policy version names what decides answers; the shadow decides none."""
    assert load_settings(env={"MEMRANK_SHADOW_PROFILE": "research"}).policy_version == \
        load_settings(env={}).policy_version


@pytest.mark.parametrize(("env", "message"), [
    ({"MEMRANK_SHADOW_PROFILE": "nope"}, "shadow.profile: unknown profile 'nope' (known: agent-observer, assistant, "
                                         "default, generative-agents, lians-admission, lians-recall, research, "
                                         "support, with-reranker)"),
    ({"MEMRANK_SHADOW_PROFILE": "  "}, "shadow.profile (set by MEMRANK_SHADOW_PROFILE): '  ' is blank (null = no "
                                       "shadow)"),
    ({"MEMRANK_SHADOW_SAMPLE_RATE": "1.5"}, "shadow.sample_rate (set by MEMRANK_SHADOW_SAMPLE_RATE): 1.5 is outside "
                                            "[0, 1]"),
    ({"MEMRANK_SHADOW_SAMPLE_RATE": "-0.1"}, "shadow.sample_rate (set by MEMRANK_SHADOW_SAMPLE_RATE): -0.1 is "
                                             "outside [0, 1]"),
])
def test_bad_values_name_the_key(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(env=env)
    assert str(err.value) == message


def test_a_file_value_of_the_wrong_type_names_the_key(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("shadow:\n  sample_rate: half\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"^shadow.sample_rate: expected float, got 'half'$"):
        load_settings(str(config), env={})
    config.write_text("shadow:\n  profle: research\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"^shadow.profle: unknown key .*did you mean 'profile'\?$"):
        load_settings(str(config), env={})
