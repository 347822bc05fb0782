"""A test module imports helpers from tests.support or from its own folder, never from another test folder.

Read with ast, like test_layers: an import inside a function counts too. Shared fixtures come from the
plugin (tests/support/plugin.py, registered in tests/conftest.py), so no test imports a fixture at all.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent


def _folder(path: Path) -> str:
    """The first folder under tests/ ("unit", "server", ...), or "" for a module at the top."""
    parts = path.relative_to(TESTS).parts
    return parts[0] if len(parts) > 1 else ""


def _cross_imports(path: Path) -> list[str]:
    own = _folder(path)
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
        for name in names:
            parts = name.split(".")
            if parts[0] != "tests" or len(parts) < 2:
                continue
            if parts[1] not in ("support", own):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {name}")
    return found


def test_the_check_sees_imports() -> None:
    """Not vacuous: the walk finds the imports of tests.support it allows, and flags a made-up cross import."""
    plugin_users = [p for p in TESTS.rglob("*.py") if "tests.support" in p.read_text(encoding="utf-8")]
    assert len(plugin_users) > 20
    probe = TESTS / "unit" / "_probe_cross_import.py"
    probe.write_text("from tests.server.conftest import client\n", encoding="utf-8")
    try:
        assert _cross_imports(probe) == ["tests/unit/_probe_cross_import.py:1 imports tests.server.conftest"]
    finally:
        probe.unlink()


def test_no_test_imports_from_another_test_folder() -> None:
    assert [hit for path in sorted(TESTS.rglob("*.py")) for hit in _cross_imports(path)] == []
