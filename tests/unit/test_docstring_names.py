"""Every dotted name a docstring gives of memrank's own code resolves, and every repository path a comment or
docstring names exists: a comment that points nowhere sends its reader on a search.

A name counts when its first part is one of memrank's packages (``core.text.words``, ``api.validate``) or
``memrank.<package>``; it may be written from any enclosing package (``text.words.tokens`` in a module of
``memrank.core``) and may end in an attribute (a function, a class, a constant). Config keys
(``server.address``), proto names (``memrank.v1``) and span names are not module paths and are left alone.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

import memrank

PACKAGE = Path(memrank.__file__).parent
ROOT = PACKAGE.parents[1]
SPAN = re.compile(r"``([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:\(\))?``")
PATH = re.compile(r"\b((?:tests|server/memrank|docs|bench|scripts|examples|clients|helm|dashboards|proto)"
                  r"/[\w./-]*\w)")
PACKAGES = {p.parent.name for p in PACKAGE.rglob("__init__.py") if "_gen" not in p.parts}


def _sources() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if "_gen" not in path.parts:
            yield ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"), path


def _resolves(dotted: str) -> bool:
    """The longest importable prefix is a module and the rest are attributes of it."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def _docstring_names() -> Iterator[tuple[str, str, str]]:
    """(module, where, dotted name) of every name a docstring gives of a memrank package."""
    for module, path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for match in SPAN.finditer(ast.get_docstring(node, clean=False) or ""):
                name = match.group(1)
                head = name.split(".")[1] if name.startswith("memrank.") else name.split(".")[0]
                if head in PACKAGES and head != "memrank":
                    yield module, f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 1)}", name


def _anchors(module: str) -> list[str]:
    """memrank.core.signals.lexical -> "", "memrank.core.signals.", "memrank.core.", "memrank."."""
    parts = module.split(".")
    return ["", *(".".join(parts[:k]) + "." for k in range(len(parts) - 1, 0, -1))]


def test_the_walk_finds_names_and_paths() -> None:
    names = [name for _, _, name in _docstring_names()]
    assert "core.text.golang" in names  # profiles/builtin.py's docstring
    assert any(PATH.search(path.read_text(encoding="utf-8")) for _, path in _sources())
    assert not _resolves("memrank.core.text.no_such_module") and not _resolves("memrank.core.batch.NoSuchName")
    assert _resolves("memrank.core.batch.Batch")


def test_every_dotted_name_in_a_docstring_resolves() -> None:
    broken = [f"{where} {name}" for module, where, name in _docstring_names()
              if not any(_resolves(anchor + name) for anchor in _anchors(module))]
    assert broken == []


def test_every_repository_path_in_a_comment_exists() -> None:
    missing = [f"{path.relative_to(ROOT)}:{n} {m.group(1)}" for _, path in _sources()
               for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
               for m in PATH.finditer(line) if not (ROOT / m.group(1)).exists()]
    assert missing == []
