"""The fast lane's list of slow modules names files that exist (a renamed module would silently join the lane)."""

from __future__ import annotations

from tests.support.plugin import SLOW_FOLDERS, SLOW_MODULES, TESTS


def test_every_slow_module_and_folder_exists() -> None:
    assert [m for m in sorted(SLOW_MODULES) if not (TESTS / m).is_file()] == []
    assert [f for f in sorted(SLOW_FOLDERS) if not (TESTS / f).is_dir()] == []
