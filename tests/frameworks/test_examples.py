"""The framework adapters' example programs (examples/frameworks/, which the docs include), run as written against
a live server: each builds its own small store, ranks through memrank and returns documents in rank order."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "frameworks"
PLACEHOLDER = "localhost:50051"
PROGRAMS = {"langchain": "langchain_compressor.py", "llamaindex": "llamaindex_postprocessor.py",
            "haystack": "haystack_ranker.py"}


def _run(name: str, target: str, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    path = EXAMPLES / PROGRAMS[name]
    code = path.read_text(encoding="utf-8")
    assert PLACEHOLDER in code
    namespace: dict[str, object] = {"__name__": "__main__"}
    exec(compile(code.replace(PLACEHOLDER, target), str(path), "exec"), namespace)
    printed = capsys.readouterr().out.splitlines()
    assert printed and printed[0].startswith("1 "), printed  # the program prints rank 1 first
    return namespace


def _ranks(values: list[int]) -> None:
    assert values == list(range(1, len(values) + 1)), "best first: ranks 1, 2, ... in placement order"


def test_every_program_is_run_here() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(PROGRAMS.values())


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_part_the_docs_show_is_short(name: str) -> None:
    """The section between the --8<-- markers: what a reader copies next to their own retriever."""
    text = (EXAMPLES / PROGRAMS[name]).read_text(encoding="utf-8")
    match = re.search(r"# --8<-- \[start:memrank\]\n(.*?)# --8<-- \[end:memrank\]", text, re.S)
    assert match, "no memrank section"
    code = [line for line in match.group(1).splitlines()
            if line.strip() and not line.startswith(("from ", "import "))]
    assert len(code) <= 7, code


def test_langchain_example(target: str, capsys: pytest.CaptureFixture[str]) -> None:
    docs = _run("langchain", target, capsys)["docs"]
    assert isinstance(docs, list) and 0 < len(docs) <= 4  # as_retriever() returns 4
    _ranks([d.metadata["memrank"]["rank"] for d in docs])
    assert all(d.metadata["memrank"]["signals"] for d in docs)


def test_llamaindex_example(target: str, capsys: pytest.CaptureFixture[str]) -> None:
    nodes = _run("llamaindex", target, capsys)["nodes"]
    assert isinstance(nodes, list) and 0 < len(nodes) <= 5
    _ranks([n.node.metadata["memrank"]["rank"] for n in nodes])
    assert [n.score for n in nodes] == sorted((n.score for n in nodes), reverse=True)


def test_haystack_example(target: str, capsys: pytest.CaptureFixture[str]) -> None:
    docs = _run("haystack", target, capsys)["docs"]
    assert isinstance(docs, list) and 0 < len(docs) <= 5
    _ranks([d.meta["memrank"]["rank"] for d in docs])
    assert "t2" in [d.id for d in docs], "the turn where Caroline decides on the trip"
