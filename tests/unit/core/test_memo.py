"""A batch's memo: saved work only, each key written once, none carried to a batch made from it."""

from __future__ import annotations

import pytest

from memrank.core.batch import Batch, Memo, RankParams
from memrank.core.pipeline import rank
from memrank.profiles.builtin import BUILTIN_PROFILES
from tests.support.build import REF, batch


def test_a_key_is_built_once_and_never_replaced() -> None:
    memo, built = Memo(), []
    assert memo.get("k", lambda: built.append(1) or "v") == "v"
    assert memo.get("k", lambda: built.append(2) or "w") == "v" and built == [1]
    with pytest.raises(KeyError, match="written once"):
        memo.put("k", "x")
    assert memo.peek("k") == "v" and memo.peek("other") is None and "other" not in memo


def test_a_taken_batch_starts_with_an_empty_memo() -> None:
    b = batch({"content": "a"}, {"content": "b"})
    b.memo.put("x", 1)
    assert b.take([1]).memo.values() == [] and b.memo.values() == [1]


def test_a_forgotten_key_is_built_again() -> None:
    memo, built = Memo(), []
    memo.get("k", lambda: built.append(1) or "v")
    memo.forget(["k", "never held"])
    assert "k" not in memo and memo.get("k", lambda: built.append(2) or "v") == "v" and built == [1, 2]


def _ranked(embedded: bool, profile: str = "default", shadow: str = "") -> Batch:
    rows = [{"content": f"the kafka consumer retries {w} times", "retrieval_score": 0.5,
             "embedding": (1.0, float(i), 0.5) if embedded else ()} for i, w in enumerate(["two", "three", "four"])]
    b = batch(*rows)
    rank(b, RankParams(query="kafka retries", reference_time=REF, profile=profile, shadow_profile=shadow),
         BUILTIN_PROFILES)
    return b


def test_the_text_indexes_go_once_scoring_was_their_last_reader() -> None:
    """A ranking lets its batch's text indexes go when selection will not read them (cosine similarity, or no
    diversity pass), and keeps the token index when the Jaccard of shingles reads it."""
    indexes = ("ascii_joined", "token_index", "padded_index")
    assert not any(k in _ranked(True).memo for k in indexes)  # default: a diversity pass, on embeddings
    assert not any(k in _ranked(False, "agent-observer").memo for k in indexes)  # lambda 1: no diversity pass
    assert not any(k in _ranked(True, shadow="support").memo for k in indexes)  # gone after the shadow's scoring
    assert "token_index" in _ranked(False).memo  # shingles: selection read it
