"""Go's text rules, for the profiles that reproduce a Go scorer: ``strings.ToLower`` and ``strings.Fields``.

``strings.ToLower`` maps every code point by itself through ``unicode.ToLower``,
Unicode's *simple* lower-case mapping, with no context. Python's
``str.lower()`` applies the full mappings instead, and differs in exactly
two ways (checked over every code point against Go 1.21+, Unicode 15.0, by
``tests/reference/test_go_observer.py``):

- "İ" (U+0130) lower-cases to "i̇" (i + U+0307) in Python and to "i" in Go;
- a capital sigma "Σ" at the end of a word becomes "ς" in Python and always
  "σ" in Go.

Both are mapped before ``str.lower()``; the rest of Python's table is Go's.

A Go string is bytes: ``strings.ToLower`` turns each byte of an invalid UTF-8
sequence into U+FFFD. A Python ``str`` holds code points instead, and the
only ones without a UTF-8 form are lone surrogates (U+D800..U+DFFF); Go
turns such a code point into U+FFFD wherever it meets one (``string(rune)``,
``utf8.EncodeRune``, ``encoding/json``), and so does ``to_lower``. Through
the API no surrogate and no invalid byte ever arrives (proto3 parsers refuse
invalid UTF-8, protobuf JSON refuses an unpaired surrogate); only a Python
caller of the core can send one.
"""

from __future__ import annotations

import re

# unicode.IsSpace, what strings.Fields splits on: the Latin-1 spaces plus Unicode White_Space. Python's
# str.split() also splits on U+001C..U+001F, so it must not be used here.
_SPACE = re.compile("[\t\n\v\f\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")
_SURROGATE = re.compile("[\ud800-\udfff]")
DOTTED_CAPITAL_I = "\u0130"
CAPITAL_SIGMA = "\u03a3"


def _simple(s: str) -> str:
    """The text lower-cased code point by code point, as ``unicode.ToLower`` does (surrogates kept)."""
    if DOTTED_CAPITAL_I in s:
        s = s.replace(DOTTED_CAPITAL_I, "i")
    if CAPITAL_SIGMA in s:
        s = s.replace(CAPITAL_SIGMA, "\u03c3")
    return s.lower()


def lower_utf8(s: str) -> bytes:
    """The UTF-8 bytes of ``strings.ToLower(s)``: what ``strings.Contains`` compares."""
    if s.isascii():
        return s.lower().encode("ascii")
    lowered = _simple(s)
    try:
        return lowered.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: U+FFFD, as Go writes a code point that has no UTF-8 form
        return _SURROGATE.sub("\ufffd", lowered).encode("utf-8")


def to_lower(s: str) -> str:
    """``strings.ToLower``: each code point by ``unicode.ToLower``, lone surrogates as U+FFFD."""
    if s.isascii():
        return s.lower()
    return lower_utf8(s).decode("utf-8")


def fields(s: str) -> list[str]:
    """``strings.Fields``: the runs of text between runs of ``unicode.IsSpace`` characters, none empty."""
    return [w for w in _SPACE.split(s) if w]
