"""Importance: the caller's value (0..1), or a rule by category when unset.

Rules are tried in order; the first whose kind set holds the memory's
(lower-cased) kind, or one of whose phrases occurs as whole words in its
head/tail sample (``text.words.padded_words``: case-folded, punctuation as spaces, so
"that's" is "that s"), wins; the reasons name the rule and the phrase:

=================  =====  ==============================================================
rule               value  matches
=================  =====  ==============================================================
correction         0.9    kind correction; starts "actually" / "correction" / "wait no";
                          "no i meant", "that s wrong", "i was wrong", "scratch that", ...
constraint_pref    0.7    kinds constraint, preference; "i prefer", "i don t eat", "never",
                          "always", "must", "allergic", "my favorite", ...
decision_fact      0.5    kinds decision, fact; "we decided", "let s go with", "my name",
                          "i live", "i am a", ...
outcome            0.4    kinds outcome, failure, attempt; "fixed", "failed", "resolved", ...
passing_remark     0.0    greetings / thanks / acknowledgements only, or < 3 word tokens
statement          0.3    anything else (a substantive but uncategorised remark)
=================  =====  ==============================================================

Importance 0 is what the zero-importance gate removes on general recall.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from memrank.core.batch import Batch
from memrank.core.profile import Profile
from memrank.core.reasons import Lazy
from memrank.core.signals.base import SMALL_BATCH, RawSignal, ScoringContext, own_features
from memrank.core.text.buffers import padded_index, short_ascii, token_index
from memrank.core.text.phrases import Phrases, PhraseSets, starts_with
from memrank.core.text.words import count_tokens, is_pleasantry, padded_words, sample

_I = ("i", "i really", "i d", "i would")
_NEGATED = ("can t", "cannot", "don t", "do not", "won t", "will not", "never")
_FAMILY = ("name", "birthday", "address", "email", "job", "wife", "husband", "partner", "son", "daughter", "kids")

CORRECTION_STARTS = ("actually", "correction", "wait no")
CORRECTION = Phrases((
    "no i meant", "i meant to say", "scratch that", "that s wrong", "that s not right", "that s incorrect",
    "that s not correct", "that s not true", "that is wrong", "that is not right", "that is incorrect", "i was wrong",
    "i stand corrected", "let me correct",
))
CONSTRAINT_PREF = Phrases((
    *(f"{i} {v}" for i, v in itertools.product(_I, ("prefer", "like", "love", "hate", "dislike", "want", "need"))),
    *(f"i {n} {v}" for n, v in itertools.product(_NEGATED, ("eat", "drink", "use", "stand", "like", "want"))),
    "i d rather", "i would rather", "always", "never", "must", "make sure", "avoid", "allergic", "my favorite",
    "my favourite", "please don t", "please do not",
))
DECISION = Phrases((
    *(f"{w} {v}" for w, v in itertools.product(("we", "i"), ("decided", "agreed", "chose", "picked", "settled on"))),
    "decided to", "let s go with", "we ll use", "we will use", "decision",
))
FACT = Phrases((*(f"my {f}" for f in _FAMILY), "i am a", "i am an", "i m a", "i m an", "i live", "i work", "i study"))
DECISION_FACT = DECISION + FACT  # one rule here; the lians cues (``importance_cues``) read the two halves apart
OUTCOME = Phrases(("finished", "completed", "fixed", "resolved", "shipped", "deployed", "failed", "succeeded",
                   "worked", "passed", "merged", "outcome", "resulted"))

RULES: tuple[tuple[str, float, frozenset[str], Phrases], ...] = (
    ("correction", 0.9, frozenset({"correction"}), CORRECTION),
    ("constraint_pref", 0.7, frozenset({"constraint", "preference"}), CONSTRAINT_PREF),
    ("decision_fact", 0.5, frozenset({"decision", "fact"}), DECISION_FACT),
    ("outcome", 0.4, frozenset({"outcome", "failure", "attempt"}), OUTCOME),
)
RULE_PHRASES = PhraseSets([phrases for _, _, _, phrases in RULES])  # every rule's phrases, searched at once
MIN_TOKENS = 3


def _match(name: str, kinds: frozenset[str], phrases: Phrases, kind: str, padded: str,
           present: frozenset[str] | None) -> str | None:
    if kind in kinds:
        return f"kind {kind}"
    if name == "correction":
        start = next((p for p in CORRECTION_STARTS if starts_with(padded, p)), None)
        if start:
            return f'starts "{start}"'
    found = phrases.find(padded, present)
    return f'"{found}"' if found else None


def rule_importance(kind: str, content: str, padded: str | None = None,
                    present: frozenset[str] | None = None) -> tuple[str, float, str]:
    """(rule name, importance, what matched) for a memory without a caller importance.

    ``present`` is the set of the padded words, when the caller has it.
    """
    padded, kind = padded_words(content) if padded is None else padded, kind.lower()
    for name, value, kinds, phrases in RULES:
        why = _match(name, kinds, phrases, kind, padded, present)
        if why:
            return name, value, why
    text = sample(content)
    if count_tokens(text, MIN_TOKENS) < MIN_TOKENS:
        return "passing_remark", 0.0, f"fewer than {MIN_TOKENS} words"
    if is_pleasantry(text):
        return "passing_remark", 0.0, "greeting, thanks or acknowledgement only"
    return "statement", 0.3, "no category matched"


@functools.lru_cache(maxsize=1024)
def _kind_rule(kind: str) -> int:
    """The index in RULES of the first rule whose kind set holds the (lower-cased) kind, else -1."""
    folded = kind.lower()
    return next((r for r, (_, _, kind_set, _) in enumerate(RULES) if folded in kind_set), -1)


# How a rule-based value was found, for the reasons.
_BY_KIND, _BY_START, _BY_PHRASE, _FEW_WORDS, _PLEASANTRY, _STATEMENT = range(1, 7)
_FALLBACK = {_FEW_WORDS: ("passing_remark", 0.0, f"fewer than {MIN_TOKENS} words"),
             _PLEASANTRY: ("passing_remark", 0.0, "greeting, thanks or acknowledgement only"),
             _STATEMENT: ("statement", 0.3, "no category matched")}


def _one_by_one(batch: Batch, given: np.ndarray, values: np.ndarray) -> RawSignal:
    """The importance signal of a small batch, memory by memory (``rule_importance``); ``values`` holds the
    clipped caller importances (0 where unset) and is filled in."""
    found: dict[int, tuple[str, float, str]] = {}
    for i in np.flatnonzero(~given).tolist():
        content = batch.contents[i]
        padded = padded_words(content)
        found[i] = rule_importance(batch.kinds[i], content, padded, frozenset(padded.split()))
        values[i] = found[i][1]
    shown = values.tolist()

    def why(i: int) -> tuple[str, ...]:
        if i in found:
            name, value, what = found[i]
            return (f"importance rule {name}: {value:g} ({what})",)
        return (f"caller importance {shown[i]:g}",)

    return RawSignal(values, Lazy(batch.n, why))


def rule_codes(batch: Batch, open_: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rule, how, detail) per memory of ``open_`` by the category rules: the index in RULES (-1 none), how it
    was found (``_BY_KIND`` ... ``_STATEMENT``; 0 for a memory not in ``open_``) and the opening's index in
    CORRECTION_STARTS or the phrase's in the rule's ``ordered`` (-1 none).

    The rules run column-wise over the batch's padded-words index (``core.text.buffers``), rule by rule in
    order, each first by kind, then by opening words (correction), then by phrase, exactly as
    ``rule_importance`` does for one memory.
    """
    n = batch.n
    rule = np.full(n, -1, dtype=np.int64)  # index into RULES
    how = np.zeros(n, dtype=np.int64)
    detail = np.full(n, -1, dtype=np.int64)  # CORRECTION_STARTS or phrases.ordered position
    if not open_.any():
        return rule, how, detail
    by_kind = {k: _kind_rule(k) for k in set(batch.kinds)}  # each distinct kind once
    kind_rule = np.fromiter(map(by_kind.__getitem__, batch.kinds), dtype=np.int64, count=n)
    # Rule r wins where it is the first rule that matches, by kind, opening (correction) or phrase; each
    # way is found for every rule at once, and the smallest rule number is taken (kind before opening
    # before phrase within a rule, as rule_importance tries them).
    index = padded_index(batch)
    none = len(RULES)
    via_kind = np.where(kind_rule >= 0, kind_rule, none)
    opening = np.full(n, -1, dtype=np.int64)
    for k in reversed(range(len(CORRECTION_STARTS))):  # the first opening listed wins
        opening[index.opens_with(CORRECTION_STARTS[k].split())] = k
    via_start = np.where(opening >= 0, 0, none)
    phrase_rule, phrase_at = RULE_PHRASES.first_found(index, open_ & (via_kind > 0) & (via_start > 0))
    via_phrase = np.where(phrase_rule >= 0, phrase_rule, none)
    won = np.minimum(np.minimum(via_kind, via_start), via_phrase)
    decided = open_ & (won < none)
    rule[decided] = won[decided]
    how[decided & (via_kind == won)] = _BY_KIND
    start_won = decided & (via_kind != won) & (via_start == won)
    how[start_won], detail[start_won] = _BY_START, opening[start_won]
    phrase_won = decided & (via_kind != won) & (via_start != won)
    how[phrase_won], detail[phrase_won] = _BY_PHRASE, phrase_at[phrase_won]
    # No rule matched: a passing remark or a statement. Short ASCII text has all its tokens in the
    # tokens index (``short_ascii``), so its count is read there; other text is counted here.
    plain = short_ascii(batch)
    counts = token_index(batch).counts if plain.any() else np.zeros(n, dtype=np.int64)
    for i in np.flatnonzero(open_ & ~decided).tolist():
        text = sample(batch.contents[i])
        if (counts[i] if plain[i] else count_tokens(text, MIN_TOKENS)) < MIN_TOKENS:
            how[i] = _FEW_WORDS
        elif is_pleasantry(text):
            how[i] = _PLEASANTRY
        else:
            how[i] = _STATEMENT
    return rule, how, detail


_RULE_VALUES = np.array([value for _, value, _, _ in RULES])


def importance(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """Caller importance clipped to [0, 1], else the rule-based value with the rule named (``rule_codes``; with
    the runtime's store, the codes it holds: ``core.features``)."""
    n = batch.n
    given = ~np.isnan(batch.importance)
    # Unset: 0 until a rule sets it (np.where, not nan_to_num: the same values after the clip, fewer calls).
    values = np.clip(np.where(given, batch.importance, 0.0), 0.0, 1.0)
    found = own_features(batch)
    if found is not None:
        rule, how, detail = (np.where(given, blank, code) for code, blank in
                             ((found.rule, -1), (found.how, 0), (found.detail, -1)))
    elif n <= SMALL_BATCH:
        # the column-wise rules instead: +18.8 % instructions per call at 1 x 384 (5.14 -> 6.11 M), columns
        # +18.1 % (5.34 -> 6.31 M); 100 and 400 within 0.2 % (``bench.instructions``, see SMALL_BATCH)
        return _one_by_one(batch, given, values)
    else:
        rule, how, detail = rule_codes(batch, ~given)
    by_rule = (how == _BY_KIND) | (how == _BY_START) | (how == _BY_PHRASE)
    values[by_rule] = _RULE_VALUES[rule[by_rule]]
    values[how == _STATEMENT] = 0.3
    kinds = batch.kinds
    shown = values.tolist()

    def why(i: int) -> tuple[str, ...]:
        if how[i] == 0:
            return (f"caller importance {shown[i]:g}",)
        if how[i] in _FALLBACK:
            name, value, what = _FALLBACK[int(how[i])]
            return (f"importance rule {name}: {value:g} ({what})",)
        name, value, _, phrases = RULES[int(rule[i])]
        if how[i] == _BY_KIND:
            what = f"kind {kinds[i].lower()}"
        elif how[i] == _BY_START:
            what = f'starts "{CORRECTION_STARTS[int(detail[i])]}"'
        else:
            what = f'"{phrases.ordered[int(detail[i])]}"'
        return (f"importance rule {name}: {value:g} ({what})",)

    return RawSignal(values, Lazy(n, why))
