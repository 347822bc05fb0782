"""Importance: the caller's value (0..1), or a rule by category when unset.

Rules are tried in order; the first whose kind set holds the memory's kind,
or whose pattern matches its head/tail sample (case-insensitive), wins:

=================  =====  ==========================================================
rule               value  matches
=================  =====  ==========================================================
correction         0.9    kind correction; "actually ...", "no, I meant", "that's wrong"
constraint_pref    0.7    kinds constraint, preference; "I prefer", "never", "allergic"
decision_fact      0.5    kinds decision, fact; "we decided", "let's go with", "my name is"
outcome            0.4    kinds outcome, failure, attempt; "fixed", "failed", "resolved"
passing_remark     0.0    greetings / thanks / acknowledgements only, or < 3 word tokens
statement          0.3    anything else (a substantive but uncategorised remark)
=================  =====  ==========================================================

Importance 0 is what the zero-importance gate removes on general recall.
"""

from __future__ import annotations

import re

import numpy as np

from memrank.core.batch import Batch
from memrank.core.scores import ScoringContext
from memrank.core.signals.base import RawSignal
from memrank.core.text import is_pleasantry, sample, tokens
from memrank.profiles.model import Profile

_APOS = "['’]"
RULES: tuple[tuple[str, float, frozenset[str], re.Pattern[str]], ...] = (
    ("correction", 0.9, frozenset({"correction"}), re.compile(
        rf"^\W*(?:actually|correction|wait,? no)\b|\bno,? i meant\b|\bi meant to say\b|\bscratch that\b"
        rf"|\bthat{_APOS}?s (?:wrong|not right|incorrect|not correct|not true)\b|\bi was wrong\b",
        re.IGNORECASE)),
    ("constraint_pref", 0.7, frozenset({"constraint", "preference"}), re.compile(
        rf"\bi (?:really )?(?:prefer|like|love|hate|dislike|want|need)\b|\bi (?:can{_APOS}?t|cannot|don{_APOS}?t|"
        r"do not|won't) (?:eat|drink|use|stand|like|want)\b|\b(?:always|never|must|make sure|avoid)\b"
        r"|\ballergic\b|\bmy favou?rite\b|\bplease (?:don't|do not|always|never)\b",
        re.IGNORECASE)),
    ("decision_fact", 0.5, frozenset({"decision", "fact"}), re.compile(
        r"\b(?:we|i) (?:decided|agreed|chose|picked|settled on)\b|\blet'?s go with\b|\bwe(?:'ll| will) use\b"
        r"|\bdecision\b|\bmy (?:name|birthday|address|email|job|wife|husband|partner|son|daughter)\b"
        rf"|\bi(?: am|{_APOS}m) an? \w+|\bi (?:live|work|study)\b",
        re.IGNORECASE)),
    ("outcome", 0.4, frozenset({"outcome", "failure", "attempt"}), re.compile(
        r"\b(?:finished|completed|fixed|resolved|shipped|deployed|failed|succeeded|worked|passed|merged"
        r"|outcome|resulted)\b",
        re.IGNORECASE)),
)
PASSING_REMARK = ("passing_remark", 0.0)
STATEMENT = ("statement", 0.3)
MIN_TOKENS = 3


def rule_importance(kind: str, content: str) -> tuple[str, float]:
    """(rule name, importance) for a memory without a caller importance."""
    text = sample(content)
    for name, value, kinds, pattern in RULES:
        if kind.lower() in kinds or pattern.search(text):
            return name, value
    if is_pleasantry(text) or len(tokens(text)) < MIN_TOKENS:
        return PASSING_REMARK
    return STATEMENT


def importance(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """Caller importance clipped to [0, 1], else the rule-based value with the rule named."""
    given = ~np.isnan(batch.importance)
    values = np.where(given, np.clip(np.nan_to_num(batch.importance), 0.0, 1.0), 0.0)
    reasons: list[tuple[str, ...]] = []
    for i, has in enumerate(given.tolist()):
        if has:
            reasons.append((f"caller importance {values[i]:g}",))
            continue
        rule, value = rule_importance(batch.kinds[i], batch.contents[i])
        values[i] = value
        reasons.append((f"importance rule {rule}: {value:g}",))
    return RawSignal(values, tuple(reasons))
