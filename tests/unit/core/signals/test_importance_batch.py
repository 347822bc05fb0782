"""The importance signal equals a one-memory reference of its rules (``rule_importance`` below: the module
docstring's table, rule by rule), value and reason, for every candidate, column-wise and memory by memory."""

from __future__ import annotations

from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from memrank.core.batch import CandidateInput, batch_from_rows
from memrank.core.signals import RawSignal, get_signal
from memrank.core.signals import importance as importance_module
from memrank.core.signals.base import ScoringContext
from memrank.core.signals.importance import (
    CONSTRAINT_PREF,
    CORRECTION,
    CORRECTION_STARTS,
    DECISION_FACT,
    OUTCOME,
    RULES,
)
from memrank.core.text import phrases as phrases_module
from memrank.core.text.words import count_tokens, is_pleasantry, padded_words, sample
from memrank.profiles.builtin import BUILTIN_PROFILES

PHRASE_WORDS = sorted({w for p in (*CORRECTION.items, *CONSTRAINT_PREF.items, *DECISION_FACT.items,
                                    *OUTCOME.items) for w in p.split()})
PIECES = [*PHRASE_WORDS, "Actually", "Wait,", "no", "correction:", "hi", "thanks!", "ok", "I'm", "that's", "don't",
          "İ", "café", "_", "x", ".", ",", "!", "\n", "I", "We", "LET'S", "go", "with", "\x00"]
contents = st.lists(st.sampled_from(PIECES), max_size=12).map(" ".join) | st.text(max_size=30)
kinds = st.sampled_from(["", "fact", "Correction", "PREFERENCE", "outcome", "note", "decision"])
importances = st.none() | st.floats(0.0, 1.0)


def rule_importance(kind: str, content: str) -> tuple[str, float, str]:
    """(rule name, importance, what matched) of one memory without a caller importance: the first rule whose
    kinds hold its kind, or (correction) whose opening words start it, or one of whose phrases it holds."""
    padded, kind = padded_words(content), kind.lower()
    for name, value, kind_set, phrases in RULES:
        if kind in kind_set:
            return name, value, f"kind {kind}"
        start = next((p for p in CORRECTION_STARTS if padded.startswith(f" {p} ")), None) \
            if name == "correction" else None
        if start:
            return name, value, f'starts "{start}"'
        found = phrases.find(padded)
        if found:
            return name, value, f'"{found}"'
    text = sample(content)
    if count_tokens(text, 3) < 3:
        return "passing_remark", 0.0, "fewer than 3 words"
    if is_pleasantry(text):
        return "passing_remark", 0.0, "greeting, thanks or acknowledgement only"
    return "statement", 0.3, "no category matched"


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(contents, kinds, importances), min_size=1, max_size=10))
def test_batch_importance_equals_rule_importance(rows: list[tuple[str, str, float | None]]) -> None:
    for few in (0, 100):  # rule phrases all at once, or the few that can match one by one
        _check(_importance(rows, few), rows)
    _check(_importance(rows, 0, tiny=len(rows)), rows)  # a small batch: memory by memory


def _importance(rows: list[tuple[str, str, float | None]], few: int, tiny: int = 0) -> RawSignal:
    """The signal column-wise (``tiny`` 0) or, for batches of up to ``tiny`` memories, memory by memory."""
    batch = batch_from_rows([CandidateInput(id=f"m{i}", content=c, kind=k, importance=imp)
                             for i, (c, k, imp) in enumerate(rows)])
    with mock.patch.object(phrases_module, "FEW_PHRASES", few), \
            mock.patch.object(importance_module, "SMALL_BATCH", tiny):
        return get_signal("importance")(batch, ScoringContext("", 0.0), BUILTIN_PROFILES["default"], None)  # type: ignore[arg-type]


def _check(got: RawSignal, rows: list[tuple[str, str, float | None]]) -> None:
    for i, (content, kind, imp) in enumerate(rows):
        if imp is not None:
            assert got.values[i] == imp and got.reasons[i] == (f"caller importance {imp:g}",)
            continue
        rule, value, why = rule_importance(kind, content)
        assert got.values[i] == value, (content, kind)
        assert got.reasons[i] == (f"importance rule {rule}: {value:g} ({why})",), (content, kind)


CROSSED = [  # (content, kind, the rule that must win): an earlier rule's opening or phrase beats a later kind
    ("no i meant green tea", "preference", "correction"),
    ("Actually, we decided on tea", "fact", "correction"),
    ("I prefer tea", "fact", "constraint_pref"),
    ("we decided to ship it", "outcome", "decision_fact"),
    ("i prefer tea, it was fixed", "", "constraint_pref"),
    ("it was fixed", "note", "outcome"),
    ("anything at all", "correction", "correction"),
    ("hi", "", "passing_remark"),
]


def test_an_earlier_rule_beats_a_later_kind() -> None:
    rows = [(content, kind, None) for content, kind, _ in CROSSED]
    for few, tiny in ((0, 0), (100, 0), (0, len(rows))):
        got = _importance(rows, few, tiny)
        _check(got, rows)
        assert [r[0].split(":")[0].removeprefix("importance rule ") for r in got.reasons] == \
            [rule for _, _, rule in CROSSED]
