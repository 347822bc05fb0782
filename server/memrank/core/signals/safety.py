"""Safety: a gate, not a penalty.

The signal is 1.0 for SAFE (and unset), 0.5 for REVIEW_NEEDED, and 0 for
UNSAFE, QUARANTINED, PENDING or injection-like content; the zeros are also
dropped by the safety gate (``core.scoring.gates``). Injection-like means one of the
``INJECTION_PATTERNS`` below matches anywhere in the content
(case-insensitive; each pattern lists trigger literals that any match
contains, tested first because ``re`` is slow). The whole content is scanned, not a head/tail sample,
so padding cannot hide an injection; every pattern is linear-time (bounded
gaps, no nested repetition).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from memrank.core.batch import Batch
from memrank.core.profile import Profile
from memrank.core.reasons import Lazy
from memrank.core.signals.base import SMALL_BATCH, RawSignal, ScoringContext, own_features
from memrank.core.text.buffers import short_ascii, token_index
from memrank.core.text.hashing import word_table
from memrank.core.text.index import WordIndex
from memrank.core.text.phrases import Cue
from memrank.core.text.words import fold
from memrank.core.types import Safety

_I = re.IGNORECASE
INJECTION_PATTERNS: Mapping[str, Cue] = MappingProxyType({
    # "ignore all previous instructions", "disregard the above rules", ...
    "override_instructions": Cue(("ignore", "disregard", "forget", "override"), re.compile(
        r"\b(?:ignore|disregard|forget|override)s?\b[^.\n]{0,40}?\b(?:previous|prior|above|earlier|preceding"
        r"|all|any|your|the|these|those)\b[^.\n]{0,20}?\b(?:instructions?|prompts?|rules|directions"
        r"|guidelines|directives)\b", _I)),
    # Role-play system prompts and chat-template markers.
    "system_prompt_roleplay": Cue(
        ("sys", "developer", "<|", "inst]", "you are now", "pretend", "act as", "jailbreak", "anything now"),
        re.compile(
            # "System: you ..." opening a line or a sentence, also behind quote marks or zero-width characters.
            r"(?:^|\n|[.!?;]\s)[^\w\n]{0,8}?(?:system|developer)[ \t]*:[ \t]*you\b|<\s*/?\s*system\s*>"
            r"|<\|(?:im_start|im_end|system|endoftext|start_header_id|end_header_id|eot_id)\|>|\[/?INST\]"
            r"|\bdo anything now\b"
            r"|<<\s*/?SYS\s*>>|\byou are now (?:an? |in )?(?:dan|unrestricted|jailbroken|developer mode|uncensored)\b"
            r"|\bpretend (?:to be|you are) (?:the |an? )?(?:system|admin|administrator|developer|root)\b"
            r"|\bact as (?:the |an? )?(?:system|admin|administrator|root)\b|\bjailbreak\b", _I)),
    # Asking the model to leak its prompt.
    "prompt_exfiltration": Cue(
        ("system prompt", "hidden instructions", "initial instructions", "developer message", "above"), re.compile(
            r"\b(?:reveal|print|show|repeat|leak|output)\b[^.\n]{0,30}?\b(?:system prompt|hidden instructions"
            r"|initial instructions|developer message)\b"
            # "Repeat the words above starting with 'You are'" (the custom-GPT instruction leak).
            r"|\brepeat\b[^.\n]{0,20}?\b(?:words|text|everything) above\b", _I)),
    # Tool or function calls smuggled into stored text.
    "tool_call_smuggling": Cue(("tool_call", "tool_use", "function_call", "invoke"), re.compile(
        r"<\s*/?\s*(?:\w+:)?(?:tool_call|tool_use|function_call|function_calls|invoke)\b"
        r"|\"(?:tool_calls|function_call)\"\s*:", _I)),
})

# The batch pre-scan. In ASCII text every match of a pattern above holds, as whole \w+ tokens (case-folded):
# override_instructions a verb and a noun of its lists; system_prompt_roleplay one of its words ("system",
# "developer", a chat-template marker name, "inst", "sys", "anything", "now", "pretend", "act", "jailbreak");
# prompt_exfiltration one of its verbs; tool_call_smuggling a tool-call name. Only candidates holding such
# words (or with long or non-ASCII content) are scanned with the patterns;
# tests/unit/core/signals/test_safety_prescan.py checks the claim against the patterns.
PRESCAN_ALL_OF = (
    ("ignore", "ignores", "disregard", "disregards", "forget", "forgets", "override", "overrides"),
    ("instruction", "instructions", "prompt", "prompts", "rules", "directions", "guidelines", "directives"),
)
PRESCAN_ANY = (
    "system", "developer", "im_start", "im_end", "endoftext", "start_header_id", "end_header_id", "eot_id",
    "inst", "anything", "sys", "now", "pretend", "act", "jailbreak",
    "reveal", "print", "show", "repeat", "leak", "output",
    "tool_call", "tool_use", "function_call", "function_calls", "invoke", "tool_calls",
)
PRESCAN_WORDS = (*PRESCAN_ALL_OF[0], *PRESCAN_ALL_OF[1], *PRESCAN_ANY)
# Which list each of PRESCAN_WORDS comes from: 0 and 1 the two PRESCAN_ALL_OF lists, 2 PRESCAN_ANY.
_PRESCAN_GROUP = np.repeat([0, 1, 2], [len(PRESCAN_ALL_OF[0]), len(PRESCAN_ALL_OF[1]), len(PRESCAN_ANY)])
_PRESCAN_TABLE = word_table(PRESCAN_WORDS)



def prescan(index: WordIndex) -> np.ndarray:
    """(n,) mask of the candidates whose words could make a pattern match (see PRESCAN_ANY)."""
    at, k = index.listed_hits(_PRESCAN_TABLE)  # one pass of the word hashes over the constant table
    held = np.zeros((3, index.n), dtype=bool)  # per PRESCAN_ALL_OF list and PRESCAN_ANY: a candidate holds one
    held[_PRESCAN_GROUP[k], index.owner[at]] = True
    suspect: np.ndarray = held[2] | (held[0] & held[1])
    return suspect


def injection_match(content: str) -> str | None:
    """The name of the first injection pattern the content matches, or None."""
    folded = fold(content)
    for name, cue in INJECTION_PATTERNS.items():
        if cue.search(content, folded):
            return name
    return None


def injections(batch: Batch, wanted: np.ndarray) -> dict[int, str]:
    """The first injection pattern matched by each ``wanted`` memory that matches one (``injection_match``)."""
    # Every memory scanned; the pre-scan instead: +7.4 % instructions at 1 x 384 (5.14 -> 5.52 M), columns +7.2 %
    # (5.34 -> 5.72 M); 100 and 400 unchanged (``bench.instructions``, see SMALL_BATCH)
    if batch.n <= SMALL_BATCH:
        suspect = np.ones(batch.n, dtype=bool)
    else:
        suspect = ~short_ascii(batch) | prescan(token_index(batch))  # long or non-ASCII: always the exact scan
    return {i: name for i in np.flatnonzero(suspect & wanted).tolist()
            if (name := injection_match(batch.contents[i])) is not None}


# Plain ints: numpy compares an array with an IntEnum member through the enum class's slow attribute lookups.
_UNSAFE, _QUARANTINED, _PENDING, _REVIEW_NEEDED = (int(s) for s in (Safety.UNSAFE, Safety.QUARANTINED, Safety.PENDING,
                                                                    Safety.REVIEW_NEEDED))


def safety(batch: Batch, ctx: ScoringContext, profile: Profile, population: np.ndarray) -> RawSignal:
    """1 safe, 0.5 review needed, 0 blocked status or injection-like content."""
    status = batch.safety
    blocked = (status == _UNSAFE) | (status == _QUARANTINED) | (status == _PENDING)
    own = own_features(batch)
    if own is None:
        found = injections(batch, ~blocked)
    else:  # the same matches, of every memory, from the runtime's store (``core.features``)
        pattern = own.injection
        names, codes = list(INJECTION_PATTERNS), pattern.tolist()
        found = {i: names[codes[i]] for i in np.flatnonzero((pattern >= 0) & ~blocked).tolist()}
    values = np.where(status == _REVIEW_NEEDED, 0.5, 1.0)
    values[blocked] = 0.0
    values[list(found)] = 0.0
    codes = status.tolist()

    def why(i: int) -> tuple[str, ...]:
        if blocked[i]:
            return (f"status {Safety(codes[i]).name}: 0",)
        if i in found:
            return (f"injection-like content ({found[i]}): 0",)
        return ("review needed: 0.5",) if codes[i] == Safety.REVIEW_NEEDED else ("safe: 1",)

    return RawSignal(values, Lazy(batch.n, why))
