"""A batch's memo: saved work only, each key written once, none carried to a batch made from it."""

from __future__ import annotations

import pytest

from memrank.core.batch import Memo
from tests.support.build import batch


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
