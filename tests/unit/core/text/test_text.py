from memrank.core.text.words import (
    MAX_TOKENS,
    SAMPLE_CHARS,
    STOP_WORDS,
    is_pleasantry,
    sample,
    terms,
    tokens,
)


def test_sample_keeps_short_text_whole():
    assert sample("short text") == "short text"


def test_sample_is_head_and_tail_within_the_bound():
    text = "H" * 10_000 + "middle" + "T" * 10_000
    s = sample(text)
    assert len(s) == SAMPLE_CHARS
    assert s.startswith("H" * (SAMPLE_CHARS // 2)) and s.endswith("T" * (SAMPLE_CHARS // 2 - 1))
    assert "middle" not in s


def test_tokens_are_lower_cased_unicode_words():
    assert tokens("Café, NAÏVE résumé! 東京 x_1") == ["café", "naïve", "résumé", "東京", "x_1"]


def test_tokens_are_capped_to_head_and_tail():
    words = [f"w{i}" for i in range(3000)]
    got = tokens(" ".join(words)[:8000])
    assert len(got) <= MAX_TOKENS
    many = tokens(" ".join(f"{i}" for i in range(1500)))  # 1500 short tokens fit in the sample
    assert len(many) == MAX_TOKENS
    assert many[: MAX_TOKENS // 2] == [str(i) for i in range(MAX_TOKENS // 2)]
    assert many[-1] == "1499"


def test_terms_drop_stop_words_and_duplicates_in_order():
    assert terms("The cat and THE dog, the cat") == ["cat", "dog"]
    assert {"the", "and", "is"} <= STOP_WORDS and "not" not in STOP_WORDS


def test_pleasantries_are_whole_messages_of_thanks_and_greetings():
    assert is_pleasantry("Thanks so much!")
    assert is_pleasantry("ok, thanks :)")
    assert is_pleasantry("Good morning!")
    assert not is_pleasantry("thanks for fixing the build")
    assert not is_pleasantry("")
