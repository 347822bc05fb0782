"""The safety signal's batch pre-scan never hides an injection the patterns would find."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from memrank.core.batch import CandidateInput, batch_from_rows
from memrank.core.signals import get_signal
from memrank.core.signals import safety as safety_module
from memrank.core.signals.base import ScoringContext
from memrank.core.signals.safety import PRESCAN_WORDS, injection_match, prescan
from memrank.core.text.buffers import token_index_of
from memrank.core.text.words import tokens
from memrank.core.types import Safety
from memrank.profiles.builtin import BUILTIN_PROFILES

CORPUS = Path(__file__).parents[3] / "reliability" / "data" / "prompt_injections.txt"
# Pieces of every pattern's alternatives, glued with separators the patterns allow, plus noise.
PIECES = ["ignore", "Ignores", "disregard", "forget", "override", "all", "previous", "the", "your", "instructions",
          "rules", "prompts", "guidelines", "System", "system:", "developer", ":", "you", "<", ">", "/", "<|",
          "|>", "im_start", "eot_id", "[INST]", "[/inst]", "do", "anything", "now", "<<SYS>>", "<< /sys >>",
          "you are now", "DAN", "an", "pretend", "to be", "admin", "act as", "root", "jailbreak", "reveal",
          "print", "system prompt", "hidden instructions", "developer message", "repeat", "the words", "above",
          "<tool_call>", "<ns:invoke", "\"tool_calls\":", "\"function_call\" :", "function_calls", ".", "\n",
          "? ", "; ", "\u200b", "'", "hello", "prompt", "message", "x", "_", "tool_use"]
SEPARATORS = ["", " ", "  ", "\t", "\n", ". "]
texts = st.lists(st.tuples(st.sampled_from(PIECES), st.sampled_from(SEPARATORS)), max_size=14).map(
    lambda parts: "".join(p + s for p, s in parts))


@settings(max_examples=1500, deadline=None)
@given(texts)
def test_every_ascii_match_holds_a_prescan_word(text: str) -> None:
    if injection_match(text) is not None and text.isascii():
        assert prescan(token_index_of([text])).tolist() == [True], text


def test_the_injection_corpus_holds_prescan_words() -> None:
    lines = [line for line in CORPUS.read_text().splitlines() if line.strip() and not line.startswith("#")]
    assert len(lines) >= 30
    for line in lines:
        if injection_match(line) is not None and line.isascii():
            assert prescan(token_index_of([line])).tolist() == [True], line
        assert set(tokens(line)) & set(PRESCAN_WORDS) or injection_match(line) is None, line


def _slow_safety(status: int, content: str) -> float:
    """The signal's definition, one candidate at a time, without any pre-scan."""
    if status in (Safety.UNSAFE, Safety.QUARANTINED, Safety.PENDING) or injection_match(content):
        return 0.0
    return 0.5 if status == Safety.REVIEW_NEEDED else 1.0


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([int(s) for s in Safety]), texts | st.text(max_size=40)),
                min_size=1, max_size=12))
def test_batch_safety_equals_the_one_at_a_time_definition(rows: list[tuple[int, str]]) -> None:
    batch = batch_from_rows([CandidateInput(id=f"m{i}", content=c, safety=s) for i, (s, c) in enumerate(rows)])
    for tiny in (0, len(rows)):  # pre-scanned, or a small batch: every memory scanned
        with mock.patch.object(safety_module, "SMALL_BATCH", tiny):
            got = get_signal("safety")(batch, ScoringContext("", 0.0), BUILTIN_PROFILES["default"], None)  # type: ignore[arg-type]
        assert got.values.tolist() == [_slow_safety(s, c) for s, c in rows]
        assert all(len(got.reasons[i]) == 1 for i in range(len(rows)))


@settings(max_examples=300, deadline=None)
@given(st.lists(texts, min_size=1, max_size=6))
def test_prescan_holds_exactly_the_candidates_with_the_listed_words(contents: list[str]) -> None:
    # The definition, token by token: a PRESCAN_ANY word, or a word of each PRESCAN_ALL_OF list.
    first, second = (set(words) for words in safety_module.PRESCAN_ALL_OF)
    expected = []
    for c in contents:
        words = set(tokens(c))
        expected.append(bool(words & set(safety_module.PRESCAN_ANY)) or bool(words & first and words & second))
    index = token_index_of(contents)
    assert prescan(index).tolist() == expected
