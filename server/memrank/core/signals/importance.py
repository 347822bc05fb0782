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
from collections.abc import Sequence

import numpy as np

from memrank.core.batch import Batch
from memrank.core.profile import Profile
from memrank.core.reasons import Lazy
from memrank.core.signals.base import SMALL_BATCH, RawSignal, ScoringContext, own_features
from memrank.core.text.buffers import padded_index, short_ascii, token_index
from memrank.core.text.index import WordIndex
from memrank.core.text.phrases import Phrases, PhraseSets
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


# A memory's importance code, one int, ordered as the rules are tried: rule by rule, within a rule its kind,
# then an opening (+ the index in CORRECTION_STARTS), then a phrase (+ its position in the rule's ``ordered``).
# The smallest code among the ways a memory matches decides. Past the rules the three fallbacks.
_OPENING = 1
_STARTS = tuple(f" {start} " for start in CORRECTION_STARTS)  # as padded words open
_PHRASE = _OPENING + len(CORRECTION_STARTS)
SPAN = _PHRASE + max(len(phrases.ordered) for _, _, _, phrases in RULES)
_NONE = FEW_WORDS = len(RULES) * SPAN
PLEASANTRY, STATEMENT = FEW_WORDS + 1, FEW_WORDS + 2
_FALLBACK = {FEW_WORDS: ("passing_remark", 0.0, f"fewer than {MIN_TOKENS} words"),
             PLEASANTRY: ("passing_remark", 0.0, "greeting, thanks or acknowledgement only"),
             STATEMENT: ("statement", 0.3, "no category matched")}
_VALUES = np.array([value for _, value, _, _ in RULES for _ in range(SPAN)] + [v for _, v, _ in _FALLBACK.values()])


@functools.lru_cache(maxsize=1024)
def _kind_code(kind: str) -> int:
    """The code of the first rule whose kind set holds the (lower-cased) kind, else ``_NONE``."""
    folded = kind.lower()
    return next((r * SPAN for r, (_, _, kind_set, _) in enumerate(RULES) if folded in kind_set), _NONE)


def rule_codes(batch: Batch, open_: np.ndarray) -> np.ndarray:
    """The importance code of each memory of ``open_`` by the category rules, -1 for the others.

    Each way a rule can match (kind, opening words, phrase) is found for every memory and rule at once, and
    the smallest code wins; a memory no rule matches is then a passing remark or a statement.
    """
    n = batch.n
    by_kind = {k: _kind_code(k) for k in set(batch.kinds)}  # each distinct kind once
    kind = np.fromiter(map(by_kind.__getitem__, batch.kinds), dtype=np.int64, count=n)
    search = open_ & (kind > 0)  # a correction kind comes first of all
    # Up to SMALL_BATCH memories searched one by one; the padded-words index always instead: +14.5 %
    # instructions per call at 1 x 384 (5.19 -> 5.94 M; ``bench.instructions``, see SMALL_BATCH)
    small = n <= SMALL_BATCH
    found = _search_each(batch.contents, search) if small else _search_index(padded_index(batch), search)
    won = np.where(open_, np.minimum(kind, found), -1)
    rest = (won == _NONE).nonzero()[0].tolist()
    if rest:  # no rule matched: a passing remark or a statement
        # Short ASCII text has all its tokens in the tokens index (``short_ascii``): its count is read there.
        plain = np.zeros(n, dtype=bool) if small else short_ascii(batch)
        counts = token_index(batch).counts if plain.any() else plain
        for i in rest:
            text = sample(batch.contents[i])
            if (counts[i] if plain[i] else count_tokens(text, MIN_TOKENS)) < MIN_TOKENS:
                won[i] = FEW_WORDS
            else:
                won[i] = PLEASANTRY if is_pleasantry(text) else STATEMENT
    return won


def _search_index(index: WordIndex, rows: np.ndarray) -> np.ndarray:
    """The smallest opening or phrase code of each memory of ``rows`` (``_NONE`` none), column-wise."""
    opening = np.full(index.n, _NONE, dtype=np.int64)
    for k in reversed(range(len(CORRECTION_STARTS))):  # the first opening listed wins
        opening[index.opens_with(CORRECTION_STARTS[k].split()) & rows] = _OPENING + k
    rule, at = RULE_PHRASES.first_found(index, rows & (opening == _NONE))  # an opening comes before any phrase
    return np.where(rule >= 0, rule * SPAN + _PHRASE + at, opening)


def _search_each(contents: Sequence[str], rows: np.ndarray) -> np.ndarray:
    """``_search_index`` of a few memories, read off each one's padded words in Python."""
    found = [_NONE] * len(contents)
    for i in rows.nonzero()[0].tolist():
        padded = padded_words(contents[i])
        if padded.startswith(_STARTS):
            found[i] = _OPENING + next(k for k, s in enumerate(_STARTS) if padded.startswith(s))
            continue
        rule, at = RULE_PHRASES.first_in(padded)
        if rule >= 0:
            found[i] = rule * SPAN + _PHRASE + at
    return np.array(found, dtype=np.int64)


def importance(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """Caller importance clipped to [0, 1], else the rule-based value with the rule named (``rule_codes``; with
    the runtime's store, the codes it holds: ``core.features``)."""
    given = ~np.isnan(batch.importance)
    found = own_features(batch)
    code = rule_codes(batch, ~given) if found is None else np.where(given, -1, found.importance)
    values = np.where(given, np.clip(batch.importance, 0.0, 1.0), _VALUES[code])  # code -1: any value
    kinds, shown, codes = batch.kinds, values.tolist(), code.tolist()

    def why(i: int) -> tuple[str, ...]:
        c = codes[i]
        if c < 0:
            return (f"caller importance {shown[i]:g}",)
        if c in _FALLBACK:
            name, value, what = _FALLBACK[c]
            return (f"importance rule {name}: {value:g} ({what})",)
        rule, way = divmod(c, SPAN)
        name, value, _, phrases = RULES[rule]
        if way == 0:
            what = f"kind {kinds[i].lower()}"
        elif way < _PHRASE:
            what = f'starts "{CORRECTION_STARTS[way - _OPENING]}"'
        else:
            what = f'"{phrases.ordered[way - _PHRASE]}"'
        return (f"importance rule {name}: {value:g} ({what})",)

    return RawSignal(values, Lazy(batch.n, why))
