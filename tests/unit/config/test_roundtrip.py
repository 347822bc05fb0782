"""--print-config prints a config file: loading it gives the same configuration, and printing that gives the same
text (default settings, a custom profile, environment overrides); an out-of-range value names its key and bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from memrank.config import load_settings
from memrank.core.errors import ConfigError

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(("config", "env"), [
    (None, {}),
    (ROOT / "examples" / "custom-profile.yaml", {}),
    (None, {"MEMRANK_MAX_CANDIDATES": "800", "MEMRANK_DECISION_LOG_ENABLED": "true", "MEMRANK_WORKERS": "3"}),
])
def test_print_load_print_is_an_identity(tmp_path: Path, config: Path | None, env: dict[str, str]) -> None:
    first = load_settings(str(config) if config else None, env=env)
    printed = tmp_path / "printed.yaml"
    printed.write_text(first.to_yaml())
    again = load_settings(str(printed), env={})
    assert again.to_yaml() == first.to_yaml()
    assert again.as_dict() == first.as_dict() and again.policy_version == first.policy_version
    assert dict(again.profiles) == dict(first.profiles)
    assert first.to_yaml().startswith(f"# memrank effective configuration; policy_version {first.policy_version}\n")


def test_the_policy_version_does_not_depend_on_how_the_config_spells_it(tmp_path: Path) -> None:
    default = load_settings(env={})
    spelled = tmp_path / "spelled.yaml"  # the default layers written out in full, a built-in profile restated
    spelled.write_text("layers:\n"
                       "  - {name: session, share: 0.4, floor_tokens: 0, max_items: 0, min_score: null}\n"
                       "  - {name: durable, share: 0.35, floor_tokens: 256}\n"
                       "  - {name: knowledge, share: 0.25}\n"
                       "profiles:\n  support: {min_score: 0.0}\n")
    assert load_settings(str(spelled), env={}).policy_version == default.policy_version
    changed = tmp_path / "changed.yaml"
    changed.write_text("profiles:\n  support: {min_score: 0.5}\n")
    assert load_settings(str(changed), env={}).policy_version != default.policy_version


def test_an_out_of_range_value_fails_naming_the_key_the_value_and_the_bounds() -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(env={"MEMRANK_WORKERS": "99"})
    assert str(err.value) == "server.workers (set by MEMRANK_WORKERS): 99 is outside [0, 64]"  # what was set, too


def test_a_fraction_for_a_whole_number_and_null_for_a_string_are_refused_naming_the_key(tmp_path: Path) -> None:
    frac = tmp_path / "frac.yaml"
    frac.write_text("limits:\n  max_candidates: 400.7\n")  # used to become 400 without a word
    with pytest.raises(ConfigError, match=r"^limits\.max_candidates: expected a whole number, got 400\.7$"):
        load_settings(str(frac), env={})
    whole = tmp_path / "whole.yaml"
    whole.write_text("limits:\n  max_candidates: 400.0\n")
    assert load_settings(str(whole), env={}).limits.max_candidates == 400
    null = tmp_path / "null.yaml"
    null.write_text("security:\n  auth_open_methods: null\n")  # used to raise AttributeError
    with pytest.raises(ConfigError, match=r"^security\.auth_open_methods: expected a string, got null$"):
        load_settings(str(null), env={})
    ok = tmp_path / "ok.yaml"
    ok.write_text("security:\n  receipt_key_file: null\n")  # a str | None key: null is its default
    assert load_settings(str(ok), env={}).security.receipt_key_file is None
