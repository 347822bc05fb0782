"""Decision records: the fast float-column writer gives json.dumps's own text, NaN as null, any size."""

from __future__ import annotations

import json

import numpy as np
import pytest

from memrank.api.sample import sampled
from memrank.decisions.mask import Masker
from memrank.decisions.record import FloatColumn, _encode, plain


@pytest.mark.parametrize("values", [
    [], [0.0], [1.0, 1.0, 0.0], [0.1, 0.2, 0.30000000000000004, 1e-300, 5e-324, 123456789.125, -0.0, 0.0],
    np.random.default_rng(0).random(500).tolist(), np.round(np.random.default_rng(1).random(500), 2).tolist(),
])
def test_float_columns_are_written_as_json_dumps_writes_them(values: list[float]) -> None:
    col = FloatColumn(np.array(values, dtype=np.float64))
    assert col.json() == json.dumps(values, separators=(",", ":"))


def test_not_a_number_is_null_and_a_whole_record_matches_json_dumps() -> None:
    col = FloatColumn(np.array([0.5, np.nan, np.inf, 0.5]))
    assert col.json() == "[0.5,null,null,0.5]" and col.tolist() == [0.5, None, None, 0.5]
    record = {"a": "ünï \"q\"", "b": [{"x": FloatColumn(np.array([0.25]))}], "c": {"d": FloatColumn(np.arange(3.0))},
              "e": [1, None, "s"], "f": None, "g": [], "h": {}}
    assert json.loads(_encode(record)) == plain(record)
    assert _encode(record) == json.dumps(plain(record), ensure_ascii=False, separators=(",", ":"))


def test_sampling_is_the_documented_hash_rule() -> None:
    import hashlib

    ids = [f"r{i}" for i in range(2000)]
    for rate in (0.0, 0.01, 0.5, 0.99, 1.0):
        want = [int.from_bytes(hashlib.sha256(i.encode()).digest()[:8], "big") / 2 ** 64 < rate for i in ids]
        assert [sampled(i, rate) for i in ids] == want
    assert abs(sum(sampled(i, 0.3) for i in ids) / len(ids) - 0.3) < 0.05


def test_masker_modes() -> None:
    assert Masker("omit").one("hello") == {"length": 5} and Masker("omit").many(["a"]) == {}
    assert Masker("plain").many(["a", "b"]) == {"content": ["a", "b"]}
    h = Masker("hash", b"k").one("hello")["hmac"]
    import hashlib
    import hmac

    assert h == hmac.new(b"k", b"hello", hashlib.sha256).hexdigest()
    with pytest.raises(ValueError):
        Masker("hash", None)
