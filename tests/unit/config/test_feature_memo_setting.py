"""server.feature_memo_bytes: its default, its variable, its off switch and its bounds."""

from __future__ import annotations

import pytest

from memrank.config import load_settings
from memrank.core.errors import ConfigError


def test_on_by_default_with_64_mib() -> None:
    assert load_settings(env={}).server.feature_memo_bytes == 64 * 1024 * 1024


def test_the_variable_sets_it_and_0_turns_it_off() -> None:
    assert load_settings(env={"MEMRANK_FEATURE_MEMO_BYTES": "1048576"}).server.feature_memo_bytes == 1 << 20
    assert load_settings(env={"MEMRANK_FEATURE_MEMO_BYTES": "0"}).server.feature_memo_bytes == 0


@pytest.mark.parametrize(("value", "message"), [
    ("100", "100 is below 4096, too small to hold an entry; 0 turns the memo off"),
    ("-1", "-1"),
    ("many", "expected int, got 'many'"),
])
def test_a_bad_size_is_refused_naming_the_key(value: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(env={"MEMRANK_FEATURE_MEMO_BYTES": value})
    assert str(err.value).startswith(f"server.feature_memo_bytes (set by MEMRANK_FEATURE_MEMO_BYTES): {message}"), \
        str(err.value)
