"""memrank uses prometheus_client through its public API only: no attribute that client_python keeps private
(``child._sum``, ``child._buckets``, ``metric._value``, ...) is read or written anywhere in memrank's package."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import prometheus_client

PACKAGE = Path(__file__).resolve().parents[3] / "server" / "memrank"
OWN = {"self", "cls"}


def private_names() -> set[str]:
    """Every ``_name`` client_python's own classes set on themselves (``self._sum = ...``), read from its source."""
    names = set()
    for path in Path(prometheus_client.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in OWN
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                names.add(node.attr)
    return names


def violations(source: str, names: set[str]) -> Iterator[tuple[int, str]]:
    """(line, text) of each ``x._name`` on anything but ``self``/``cls`` whose name client_python keeps private,
    and of each private name imported from prometheus_client."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in names and not (
                isinstance(node.value, ast.Name) and node.value.id in OWN):
            yield node.lineno, ast.unparse(node)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("prometheus_client"):
            for alias in node.names:
                if alias.name.startswith("_") or any(p.startswith("_") for p in (node.module or "").split(".")):
                    yield node.lineno, f"from {node.module} import {alias.name}"


def test_client_pythons_private_names_are_found() -> None:
    names = private_names()
    assert {"_sum", "_buckets", "_value", "_created", "_metrics", "_name"} <= names


def test_the_check_catches_the_old_recorders_writes() -> None:
    """The writes issue #45 named, and others like them, are caught; the public calls are not."""
    names = private_names()
    caught = "child._sum.inc(total)\nchild._buckets[b].inc(count)\nm._value.get()\nfamily._created\n"
    assert sorted(line for line, _ in violations(caught, names)) == [1, 2, 3, 4]
    public = "child.observe(v)\nfamily.labels('a').inc(2)\nself._sum = 0\nregistry.register(collector)\n"
    assert list(violations(public, names)) == []


def test_memrank_reaches_no_private_attribute_of_prometheus_client() -> None:
    names = private_names()
    found = [f"{path.relative_to(PACKAGE.parent)}:{line}: {text}" for path in sorted(PACKAGE.rglob("*.py"))
             if "_gen" not in path.parts for line, text in violations(path.read_text(encoding="utf-8"), names)]
    assert found == []
