"""Only ``config`` reads the environment (STYLE.md); each other use of it is listed here with its reason."""

from __future__ import annotations

import ast
from pathlib import Path

import memrank

PACKAGE = Path(memrank.__file__).parent
# (module, function) -> why it touches os.environ outside config/
ALLOWED = {
    ("cli.py", "_early_level"): "the first log line's level, before the config package is imported",
    ("system/defaults.py", "apply"): "sets the process defaults it documents",
    ("system/defaults.py", "_keep_freed_memory"): "a MALLOC_ variable already set wins; sets them for workers",
    ("lifecycle/supervisor.py", "_supervise"): "writes the workers' process channels (metrics dir, lock file)",
    ("lifecycle/reload.py", "__init__"): "hands the environment to config.config_file",
}


class _Finder(ast.NodeVisitor):
    """(innermost function or "<module>") of every ``environ`` / ``getenv`` named in a module."""

    def __init__(self) -> None:
        self.where = ["<module>"]
        self.found: set[str] = set()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.where.append(node.name)
        self.generic_visit(node)
        self.where.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in ("environ", "environb", "getenv"):
            self.found.add(self.where[-1])
        self.generic_visit(node)

    def visit_alias(self, node: ast.alias) -> None:
        if node.name in ("environ", "environb", "getenv"):
            self.found.add(self.where[-1])


def _uses() -> set[tuple[str, str]]:
    found = set()
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        if not rel.startswith(("config/", "_gen/")):
            finder = _Finder()
            finder.visit(ast.parse(path.read_text(encoding="utf-8")))
            found |= {(rel, where) for where in finder.found}
    return found


def test_only_config_reads_the_environment() -> None:
    assert _uses() <= set(ALLOWED), sorted(_uses() - set(ALLOWED))
