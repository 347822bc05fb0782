"""Dependencies run one way: core <- profiles <- config <- api; metrics, the runtime (grpc) and the rest on top.

Read from the source with ast, so an import inside a function or under TYPE_CHECKING counts as much as one
at the top of a module; a relative import is resolved against its module. The last test keeps the circles
out: a function-level import of a memrank module is allowed to defer a load, never to dodge a cycle.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import memrank

PACKAGE = Path(memrank.__file__).parent
GENERATED = PACKAGE / "_gen"


def _modules(under: Path = PACKAGE) -> Iterator[tuple[str, Path]]:
    """(dotted name, path) of every hand-written module under ``under`` (a package, or one module)."""
    for path in sorted(under.rglob("*.py")) if under.is_dir() else [under]:
        if GENERATED in path.parents:
            continue
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def _imports(name: str, path: Path) -> Iterator[tuple[ast.stmt, str, str]]:
    """(statement, imported dotted name, where) of every import in the module; where is "module", "function"
    (inside a function) or "typing" (under ``if TYPE_CHECKING``, never run)."""
    is_package = path.name == "__init__.py"

    def walk(node: ast.AST, where: str) -> Iterator[tuple[ast.stmt, str, str]]:
        for child in ast.iter_child_nodes(node):
            inside = where
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                inside = "function"
            elif isinstance(child, ast.If) and where == "module" and "TYPE_CHECKING" in ast.unparse(child.test):
                inside = "typing"
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield child, alias.name, inside
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    package = name.split(".") if is_package else name.split(".")[:-1]
                    package = package[: len(package) - (child.level - 1)]
                    base = ".".join([*package, base] if base else package)
                yield child, base, inside
                for alias in child.names:  # `from memrank import config` imports memrank.config
                    yield child, f"{base}.{alias.name}", inside
            yield from walk(child, inside)

    yield from walk(ast.parse(path.read_text(encoding="utf-8"), str(path)), "module")


def _within(imported: str, packages: tuple[str, ...]) -> bool:
    return any(imported == p or imported.startswith(p + ".") for p in packages)


def _violations(layer: str, forbidden: tuple[str, ...]) -> list[str]:
    return [f"{path.relative_to(PACKAGE.parent)}:{stmt.lineno} imports {imported}"
            for name, path in _modules(PACKAGE / layer)
            for stmt, imported, _ in _imports(name, path) if _within(imported, forbidden)]


def test_the_walk_sees_the_layers() -> None:
    """The checks below are not vacuous: the modules are found and their imports read."""
    core = dict(_modules(PACKAGE / "core"))
    assert "memrank.core.pipeline" in core and "memrank.core.signals.relevance" in core
    assert any(imported == "memrank.core.profile.Profile"
               for _, imported, _ in _imports("memrank.core.pipeline", core["memrank.core.pipeline"]))
    assert _violations("metrics", ("memrank.config",))  # metrics sits on top of config
    assert _violations("core/explain", ("memrank.core.scoring",))  # explanation reads scoring's columns
    assert _violations("tuning", ("memrank.evaluation",))  # tuning builds on evaluation's harness and metrics


# What sits on top of everything below: the edge and its callers (README, "Code layout").
EDGE_AND_UP = ("memrank.grpc", "memrank.client", "memrank.lifecycle", "memrank.integrations", "memrank.tuning",
               "memrank.evaluation", "memrank.cli")


@pytest.mark.parametrize(("layer", "forbidden"), [
    ("core", ("memrank.profiles", "memrank.config", "memrank.system", "memrank.api", "memrank.metrics",
              "memrank.decisions", *EDGE_AND_UP)),
    ("system", ("memrank.profiles", "memrank.config", "memrank.api", "memrank.metrics", "memrank.decisions",
                *EDGE_AND_UP)),
    ("profiles", ("memrank.config", "memrank.api", "memrank.metrics", "memrank.decisions", *EDGE_AND_UP)),
    ("config", ("memrank.api", "memrank.metrics", "memrank.decisions", *EDGE_AND_UP)),
    ("api", ("memrank.metrics", "memrank.decisions", *EDGE_AND_UP)),
    ("metrics", EDGE_AND_UP),
    ("decisions", EDGE_AND_UP),
    ("grpc", EDGE_AND_UP[1:]),
    ("lifecycle", ("memrank.client", "memrank.integrations", "memrank.tuning", "memrank.evaluation", "memrank.cli")),
    # Evaluation sits below tuning: tune's LoCoMo set is eval's harness, both score with evaluation.metrics,
    # and `eval --log` (a replay of the decision log through tuning's objective) is tuning.replay.
    ("evaluation", ("memrank.tuning", "memrank.integrations", "memrank.cli")),
    ("client", ("memrank.core", "memrank.api", "memrank.config", "memrank.profiles", "memrank.system",
                "memrank.metrics", "memrank.decisions",
                "memrank.grpc", "memrank.lifecycle", "memrank.integrations", "memrank.tuning", "memrank.evaluation",
                "memrank.cli")),
])
def test_a_layer_imports_nothing_above_it(layer: str, forbidden: tuple[str, ...]) -> None:
    """core <- profiles <- config <- system <- api <- metrics, decisions <- grpc <- lifecycle <- the rest, and the
    client beside them: the scoring core reads no profile parsing, configuration, metrics or transport; profiles
    read only core; the wire API no runtime; the client nothing of the server (only the generated messages); and so
    on up to the edge."""
    assert _violations(layer, forbidden) == []


def test_prometheus_client_is_named_only_under_metrics() -> None:
    """The runtime, the API and everything else reach prometheus_client through memrank.metrics."""
    outside = [f"{path.relative_to(PACKAGE.parent)}:{stmt.lineno}" for name, path in _modules()
               if not name.startswith("memrank.metrics")
               for stmt, imported, _ in _imports(name, path) if _within(imported, ("prometheus_client",))]
    inside = [name for name, path in _modules(PACKAGE / "metrics")
              for _, imported, _ in _imports(name, path) if _within(imported, ("prometheus_client",))]
    assert inside  # the walk sees the imports it forbids elsewhere
    assert outside == []


def _package(name: str) -> str:
    """memrank.tuning.metrics -> tuning; memrank.cli -> cli."""
    return name.split(".")[1]


def test_the_packages_import_each_other_one_way() -> None:
    """No circle between memrank's packages (and top-level modules), whatever the kind of import (module,
    function, TYPE_CHECKING): evaluation and tuning imported each other until evaluation's --log report moved
    into tuning.replay and both metrics modules into evaluation.metrics."""
    graph: dict[str, set[str]] = {}
    for name, path in _modules():
        if name == "memrank":
            continue
        for _, imported, _ in _imports(name, path):
            if imported.startswith("memrank.") and _package(imported) != _package(name):
                graph.setdefault(_package(name), set()).add(_package(imported))

    def reachable(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for nxt in graph.get(todo.pop(), set()) - seen:
                seen.add(nxt)
                todo.append(nxt)
        return seen

    assert "evaluation" in graph["tuning"]  # the walk sees the arrow it keeps one way
    assert sorted(f"{p} imports {q}, which reaches {p}" for p in graph for q in graph[p] if p in reachable(q)) == []


LAYOUT = PACKAGE.parents[1] / "docs" / "development" / "code-layout.md"
UNDRAWN = {"_gen", "__version__"}


def test_the_diagram_draws_the_imports() -> None:
    """docs/development/code-layout.md's mermaid picture: every arrow is an import, and every import between
    packages is an arrow or follows a path of arrows."""
    text = LAYOUT.read_text(encoding="utf-8")
    chart = text[text.index("```mermaid"):]
    chart = chart[: chart.index("```", 3)]
    drawn = {(m.group(1), m.group(2)) for m in re.finditer(r'^\s*(\w+)(?:\[".*?"\])?\s*-->\s*(\w+)\s*$', chart,
                                                           re.MULTILINE)}
    actual = {(_package(name), _package(imported)) for name, path in _modules() if name != "memrank"
              for _, imported, _ in _imports(name, path) if imported.startswith("memrank.")}
    actual = {(a, b) for a, b in actual if a != b and not {a, b} & UNDRAWN}

    def implied(a: str, b: str) -> bool:
        seen, todo = {a}, [a]
        while todo:
            here = todo.pop()
            for p, q in drawn:
                if p == here and q not in seen:
                    seen.add(q)
                    todo.append(q)
        return b in seen

    assert drawn and sorted(drawn - actual) == []
    assert sorted((a, b) for a, b in actual if not implied(a, b)) == []


def test_no_function_level_import_dodges_a_cycle() -> None:
    """A memrank module imported inside a function does not, through module-level imports, import the importer.

    Deferring a load (the gRPC server behind a CLI command) is fine; hiding a circle in a function is not.
    A module's own packages are left out of the graph: importing memrank.a.b runs memrank.a first anyway.
    """
    names = dict(_modules())

    def targets(name: str, imported: str) -> set[str]:
        parts = imported.split(".")
        found = {".".join(parts[:i]) for i in range(1, len(parts) + 1)} & names.keys()
        return {t for t in found if t != name and not name.startswith(t + ".")}

    graph: dict[str, set[str]] = {name: set() for name in names}
    deferred: list[tuple[str, int, str]] = []
    for name, path in names.items():
        for stmt, imported, where in _imports(name, path):
            for target in targets(name, imported):
                if where == "function":
                    deferred.append((name, stmt.lineno, target))
                elif where == "module":
                    graph[name].add(target)

    def reaches(start: str, goal: str) -> bool:
        seen, todo = {start}, [start]
        while todo:
            for nxt in graph[todo.pop()] - seen:
                if nxt == goal:
                    return True
                seen.add(nxt)
                todo.append(nxt)
        return False

    assert deferred  # the CLI defers loads: the check sees function-level imports
    assert sorted({f"{name}:{line} imports {target}, which imports {name}"
                   for name, line, target in deferred if reaches(target, name)}) == []


# Inside the core, the stages of a request's path, in order (README, "Code layout"); below them the
# vocabulary every stage reads (the request as columns, the profile, enums, errors, lazy reasons), above
# them the two entry points.
CORE_STAGES = ("text", "signals", "scoring", "selection", "explain")
CORE_VOCABULARY = ("types", "errors", "reasons", "profile", "batch")
CORE_ENTRIES = ("memrank.core.pipeline", "memrank.core.admission")


@pytest.mark.parametrize("stage", CORE_STAGES)
def test_a_core_stage_imports_no_later_stage(stage: str) -> None:
    """text <- signals <- scoring <- selection <- explain: the tree reads top to bottom like the pipeline."""
    later = tuple(f"memrank.core.{s}" for s in CORE_STAGES[CORE_STAGES.index(stage) + 1:])
    assert _violations(f"core/{stage}", (*later, *CORE_ENTRIES)) == []


@pytest.mark.parametrize("module", CORE_VOCABULARY)
def test_the_core_vocabulary_imports_no_stage(module: str) -> None:
    assert _violations(f"core/{module}.py", (*(f"memrank.core.{s}" for s in CORE_STAGES), *CORE_ENTRIES)) == []


def test_the_client_loads_nothing_of_the_server() -> None:
    """Importing memrank.client (and using its request builder) loads only the client and the generated
    messages: no core, wire API, configuration or runtime, so a caller's process pays for none of them."""
    import subprocess
    import sys

    code = ("import sys, memrank.client as c; c.RankingClient; "
            "from memrank.client.requests import rank_request; "
            "print(sorted(m for m in sys.modules if m.startswith('memrank')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = eval(out)  # a list literal printed by the child
    assert "memrank.client.sync" in loaded  # the walk sees what it checks
    assert [m for m in loaded if m != "memrank" and not m.startswith(("memrank.client", "memrank._gen"))] == []
