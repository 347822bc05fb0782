"""The code blocks of the docs (docs/**/*.md and README.md) that are written inline rather than included from a file
the tests run: every `memrank ...` command parses with memrank's own parser (its flags exist), every config-file
YAML block loads as a configuration, every Python block compiles. Only fenced code is read, never the prose; the
examples the pages include with --8<-- are run by tests/server/test_examples.py and tests/frameworks/."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from memrank.cli import _parser
from memrank.config import load_settings

ROOT = Path(__file__).resolve().parents[2]
PAGES = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
CONFIG_KEYS = {"server", "limits", "security", "drift", "decision_log", "tracing", "layers", "profiles"}


def _blocks(lang: str) -> list[tuple[str, str]]:
    out = []
    for page in PAGES:
        for m in FENCE.finditer(page.read_text(encoding="utf-8")):
            if m.group(1) == lang and not m.group(2).lstrip().startswith("--8<--"):
                out.append((f"{page.relative_to(ROOT)}#{len(out)}", m.group(2)))
    return out


def _commands() -> list[tuple[str, list[str]]]:
    out = []
    for where, block in _blocks("sh"):
        for line in block.replace("\\\n", " ").splitlines():
            for part in (p.strip() for p in line.split("&&")):
                if part == "memrank" or part.startswith("memrank "):
                    out.append((where, shlex.split(part, comments=True)[1:]))
    return out


@pytest.mark.parametrize(("where", "argv"), _commands(), ids=[" ".join(a[:1]) + f" ({w})" for w, a in _commands()])
def test_memrank_commands_parse(where: str, argv: list[str]) -> None:
    try:
        _parser().parse_args(argv)
    except SystemExit as exc:
        pytest.fail(f"{where}: memrank {' '.join(argv)} does not parse (exit {exc.code})")


CONFIGS = [(w, b) for w, b in _blocks("yaml")
           if "…" not in b and isinstance(yaml.safe_load(b), dict) and set(yaml.safe_load(b)) <= CONFIG_KEYS]


@pytest.mark.parametrize(("where", "block"), CONFIGS, ids=[w for w, _ in CONFIGS])
def test_config_blocks_load(where: str, block: str, tmp_path: Path) -> None:
    path = tmp_path / "memrank.yaml"
    path.write_text(block, encoding="utf-8")
    load_settings(str(path), env={})


@pytest.mark.parametrize(("where", "block"), _blocks("python"), ids=[w for w, _ in _blocks("python")])
def test_python_blocks_compile(where: str, block: str) -> None:
    compile(block, where, "exec")


def test_there_is_something_to_check() -> None:
    assert len(_commands()) >= 5 and len(CONFIGS) >= 3
