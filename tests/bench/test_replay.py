"""bench.replay: it says why and stops when the LoCoMo data is absent; the share of candidates seen before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench import replay
from bench.replay_data import Question, seen_share


def test_without_the_data_the_replay_says_so_and_skips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert replay.main(["--data", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert err.startswith(f"bench.replay skipped: LoCoMo data absent: {tmp_path / 'dev.jsonl'} not found")


def _question(*contents: str) -> Question:
    request: dict[str, Any] = {"candidates": [{"content": c} for c in contents]}
    return Question("q", request, None, None, None)  # type: ignore[arg-type]


def test_seen_share_counts_candidates_an_earlier_question_sent() -> None:
    qs = [_question("a", "b"), _question("b", "c", "a"), _question("d")]
    assert seen_share(qs) == pytest.approx(2 / 6)  # "b" and "a" of the second question, of 6 sent
