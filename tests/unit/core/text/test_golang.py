"""Go's strings.ToLower and strings.Fields, by hand (tests/reference/test_go_observer.py checks them against Go)."""

from memrank.core.text.golang import fields, lower_utf8, to_lower


def test_dotted_capital_i_lower_cases_to_a_plain_i():
    # unicode.ToLower('İ') = 'i' (UnicodeData's simple mapping); Python's lower() gives "i" + U+0307.
    assert to_lower("İstanbul") == "istanbul"
    assert "İstanbul".lower() == "i\u0307stanbul"
    assert to_lower("I ı") == "i ı"  # dotless i is already lower case; capital I is ASCII


def test_capital_sigma_is_always_small_sigma():
    # Go has no final-sigma rule: "ΟΔΟΣ" -> "οδοσ" where Python gives "οδος".
    assert to_lower("ΟΔΟΣ") == "οδοσ"
    assert "ΟΔΟΣ".lower() == "οδος"
    assert to_lower("ΣΊΣΥΦΟΣ ΣΣ Σ") == "σίσυφοσ σσ σ"
    assert to_lower("ς") == "ς"  # a small final sigma stays as sent


def test_other_letters_as_python_and_combining_marks_kept():
    assert to_lower("ÀÉ Ǆ ǅ \u212a \u2126 ẞ A\u030a") == "àé ǆ ǆ k ω ß a\u030a"


def test_lone_surrogates_become_the_replacement_character():
    assert to_lower("a\ud800B\udfff") == "a\ufffdb\ufffd"
    assert lower_utf8("x\ud83d") == "x\ufffd".encode()


def test_lower_utf8_is_the_encoding_of_to_lower():
    for s in ("ASCII Text", "İ Σ é 日本", "", "\ud800"):
        assert lower_utf8(s) == to_lower(s).encode("utf-8")


def test_fields_split_on_go_white_space_only():
    # U+001C is white space for Python's str.split() but not for Go's unicode.IsSpace; U+0085, U+00A0 and
    # U+3000 are white space in both; U+200B (zero-width space) and U+180E in neither.
    assert fields(" a\u00a0b\x1cc  d\u3000e\x85f\n") == ["a", "b\x1cc", "d", "e", "f"]
    python_split = str.split
    assert python_split("a\x1cb") == ["a", "b"]
    assert fields("a\u200bb\u180ec") == ["a\u200bb\u180ec"]
    assert fields("   ") == [] and fields("") == []
