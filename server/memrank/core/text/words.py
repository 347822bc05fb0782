"""Normalising and sampling text: bounded samples, word tokens, padded words, stop words, one punctuation table.

Lexical work never sees more than a head/tail sample of ``SAMPLE_CHARS``
characters and ``MAX_TOKENS`` tokens per candidate, so its cost is bounded
whatever the caller sends. Tokens are ``re`` ``\\w+`` runs (Unicode word
characters, so "café" and "東京" are words) of the ``str.lower()`` text.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from typing import TypeVar

import numpy as np

IntLike = TypeVar("IntLike", int, np.ndarray)
SAMPLE_CHARS = 8192
MAX_TOKENS = 1024

# A small, documented English stop-word list (function words and pronouns).
# Deliberately short: content words such as "not" or "never" are kept because
# they change meaning.
STOP_WORDS = frozenset((
    "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as", "at", "be",
    "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do",
    "does", "doing", "down", "during", "each", "few", "for", "from", "further", "had", "has", "have", "having",
    "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it",
    "its", "itself", "just", "me", "more", "most", "my", "myself", "no", "nor", "of", "off", "on", "once", "only",
    "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same", "she", "should", "so", "some", "such",
    "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this",
    "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where",
    "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself",
    "yourselves", "s", "t", "d", "ll", "m", "re", "ve",
))

_WORD = re.compile(r"\w+")
# For ASCII text, \w is [A-Za-z0-9_]: a bytes translation (every other byte a space) and split() give
# exactly the tokens of _WORD.findall, 4x faster than the regex (the regex alone: +1.5 % instructions at 1 x 384,
# 5.19 -> 5.27 M, ``bench.instructions``; 100 and 400 read the batch index instead).
_ASCII_NON_WORD = bytes(b if chr(b).isascii() and (chr(b).isalnum() or b == ord("_")) else 32 for b in range(256))

# Punctuation: a separator in padded words (so "that's" reads "that s" and "don't" "don t"). The one table:
# the index buffers take its ASCII part as a bytes table.
PUNCT_CHARS = "!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~'’‘“”«»—–…¡¿"
_PUNCT = str.maketrans({c: " " for c in PUNCT_CHARS})
# The same mapping for ASCII text as a bytes table (bytes.translate is much faster than str.translate).
_ASCII_PUNCT = bytes(32 if chr(b) in PUNCT_CHARS else b for b in range(256))

# A whole message that is only greetings, thanks or acknowledgements.
_PLEASANTRY = re.compile(
    r"^(?:(?:hi|hello|hey|yo|good (?:morning|afternoon|evening|night)|thanks?(?: you)?(?: so much| a lot)?"
    r"|thx|ty|cheers|ok(?:ay)?|cool|great|nice|sure|yes|yeah|yep|nope|lol|haha|bye|goodbye|see you"
    r"|got it|sounds good|you'?re welcome|np|no problem|awesome|perfect|will do)[\s,.!?:;)(-]*)+$",
    re.IGNORECASE,
)


# Python's re.IGNORECASE lets an ASCII letter match these four non-ASCII
# letters too; mapping them before lower() keeps fold() a superset.
_RE_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


def sample(content: str) -> str:
    """The head and tail of the content, at most SAMPLE_CHARS characters."""
    if len(content) <= SAMPLE_CHARS:
        return content
    half = SAMPLE_CHARS // 2
    # The space keeps the last head word and the first tail word apart.
    return content[:half] + " " + content[-(half - 1):]


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens of a sample of the text, at most MAX_TOKENS (head and tail)."""
    lowered = sample(text).lower()
    words = ascii_words(lowered) if lowered.isascii() else _WORD.findall(lowered)
    if len(words) <= MAX_TOKENS:
        return words
    half = MAX_TOKENS // 2
    return words[:half] + words[-half:]


def ascii_words(text: str) -> list[str]:
    """``_WORD.findall`` of an ASCII text, by translation instead of a regex scan."""
    return text.encode("ascii").translate(_ASCII_NON_WORD).decode("ascii").split()


def terms(text: str, extra_stop_words: frozenset[str] = frozenset()) -> list[str]:
    """Tokens without stop words, in order, duplicates removed."""
    if extra_stop_words:
        return list(dict.fromkeys(t for t in tokens(text) if t not in STOP_WORDS and t not in extra_stop_words))
    return list(dict.fromkeys(t for t in tokens(text) if t not in STOP_WORDS))


def is_pleasantry(text: str) -> bool:
    """True when the whole text is greetings, thanks or acknowledgements."""
    stripped = sample(text).strip()
    return bool(stripped) and len(stripped) <= 200 and _PLEASANTRY.match(stripped) is not None


CHARS_PER_TOKEN = 4  # a token count the caller did not send: ceil(characters / 4), everywhere memrank needs one


def estimated_tokens(chars: IntLike) -> IntLike:
    """ceil(chars / CHARS_PER_TOKEN), of one count or of an integer array (the one token estimate)."""
    return (chars + (CHARS_PER_TOKEN - 1)) // CHARS_PER_TOKEN


def words(text: str) -> list[str]:
    """The ``\\w+`` runs of a text, as they stand (the one word splitter; ``tokens`` lower-cases a sample)."""
    return _WORD.findall(text)


def name_fold(text: str) -> str:
    """NFKD, combining marks removed, case-folded: the form names are compared in ("José" ~ "jose")."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def count_tokens(text: str, limit: int) -> int:
    """Number of word tokens in the sample of the text, counting no further than limit."""
    return sum(1 for _ in itertools.islice(_WORD.finditer(sample(text)), limit))


def fold(text: str) -> str:
    """Lower-cased text in which every IGNORECASE match of an ASCII literal shows as that literal."""
    if text.isascii():  # _RE_FOLD maps only non-ASCII letters; str.translate is slow
        return text.lower()
    return text.translate(_RE_FOLD).lower()


def padded_words(text: str) -> str:
    """The padded words of the text's head/tail sample: " word word ... word " (case-folded, punctuation and
    white space as single spaces), what the phrase rules search."""
    s = sample(text)
    if s.isascii():  # fold() is lower() on ASCII text
        spaced = s.lower().encode("ascii").translate(_ASCII_PUNCT).decode("ascii")
    else:
        spaced = fold(s).translate(_PUNCT)
    return " " + " ".join(spaced.split()) + " "
