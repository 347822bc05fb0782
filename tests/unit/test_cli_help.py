"""Every `memrank ... --help` prints what a user reads: no argparse escapes left in it (`95%%`)."""

from __future__ import annotations

import argparse

import pytest

from memrank.cli import _parser


def _commands() -> list[tuple[str, argparse.ArgumentParser]]:
    out = [("memrank", _parser())]
    i = 0
    while i < len(out):
        name, parser = out[i]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                out += [(f"{name} {sub}", p) for sub, p in action.choices.items()]
        i += 1
    return out


@pytest.mark.parametrize(("name", "parser"), _commands(), ids=[n for n, _ in _commands()])
def test_help_has_no_argparse_escapes(name: str, parser: argparse.ArgumentParser) -> None:
    text = parser.format_help()
    assert "%%" not in text, name
    assert "%(" not in text, name
