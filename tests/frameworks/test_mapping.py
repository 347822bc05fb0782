"""The shared mapping (memrank.integrations.mapping) on its own: what each documented rule sends."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import numpy as np
import pytest

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.client.requests import candidates_of
from memrank.integrations.mapping import Item, MappingError, MetadataKeys, build_request

EPOCH_2026_05_01 = 1777593600  # 2026-05-01T00:00:00Z


def _one(meta: dict[str, object], **kw: object) -> pb.Candidate:
    """The one document's candidate, read back from the columns it is sent as."""
    req = build_request("q", [Item("text", meta, "d0", 0.5)], **kw)  # type: ignore[arg-type]
    assert not req.candidates and req.HasField("columns"), "the adapters send the columnar form"
    return candidates_of(req)[0]


def _matrix(req: pb.RankRequest) -> list[list[float]]:
    """The packed embeddings, row by row."""
    return np.frombuffer(req.embeddings_f32, "<f4").reshape(len(req.columns.ids), req.embedding_dim).tolist()


@pytest.mark.parametrize("value", [
    "2026-05-01T00:00:00Z", "2026-05-01T02:00:00+02:00", "2026-05-01T00:00:00", EPOCH_2026_05_01,
    float(EPOCH_2026_05_01), datetime(2026, 5, 1, tzinfo=UTC), datetime(2026, 5, 1),
    datetime(2026, 4, 30, 19, tzinfo=timezone(timedelta(hours=-5))), date(2026, 5, 1), str(EPOCH_2026_05_01),
])
def test_timestamps_in_every_documented_form(value: object) -> None:
    c = _one({"created_at": value})
    assert (c.created_at.seconds, c.created_at.nanos) == (EPOCH_2026_05_01, 0)


@pytest.mark.parametrize(("key", "value", "problem"), [
    ("created_at", "yesterday", "a timestamp must be"),
    ("valid_to", [2026], "a timestamp must be"),
    ("importance", 1.5, "importance must be a number in [0, 1]"),
    ("importance", True, "importance must be a number in [0, 1]"),
    ("importance", float("nan"), "importance must be a number in [0, 1]"),
    ("position", 2**53 + 1, "position must be an integer in [0, 2^53]"),
    ("position", 1.5, "position must be an integer in [0, 2^53]"),
    ("token_count", -3, "token_count must be an integer"),
    ("kind", 3, "kind must be a string"),
    ("thread", 1.5, "thread must be a string or an integer"),
    ("safety", "fine", "safety must be one of safe, review_needed"),
    ("memory_source", 99, "source must be one of system_verified"),
    ("embedding", ["a", "b"], "an embedding must be a non-empty sequence of finite numbers"),
    ("embedding", [], "an embedding must be a non-empty sequence of finite numbers"),
    ("embedding", [True, 0.5], "an embedding must be a non-empty sequence of finite numbers"),
    ("embedding", np.array([True, False]), "an embedding must be a non-empty sequence of finite numbers"),
    ("embedding", [1.0, "0.5"], "an embedding must be a non-empty sequence of finite numbers"),
    ("embedding", [1.0, None], "an embedding must be a non-empty sequence of finite numbers"),
    ("embedding", [1.0, float("inf")], "an embedding must be a non-empty sequence of finite numbers"),
    ("embedding", [1.0, 1e39], "finite as float32 too"),  # float32's largest is about 3.4e38
    ("embedding", [[1.0, 2.0], [3.0, 4.0]], "an embedding must be a non-empty sequence of finite numbers"),
    ("embedding", np.zeros((2, 2)), "an embedding must be a non-empty sequence of finite numbers"),
    ("embedding", "0.5", "an embedding must be a non-empty sequence of finite numbers"),
])
def test_malformed_values_name_the_document_and_key(key: str, value: object, problem: str) -> None:
    with pytest.raises(MappingError) as err:
        _one({key: value})
    assert err.value.document == "document 0 (id 'd0')"
    assert err.value.key == f"metadata[{key!r}]"
    assert problem in err.value.problem


def test_documented_conversions() -> None:
    c = _one({"position": "7", "token_count": 12.0, "access_count": "3", "thread": 42, "importance": "0.25",
              "memory_source": "Source_Chat", "safety": 2, "kind": "decision", "layer": "session",
              "speaker": "Caroline"})
    assert (c.position, c.token_count, c.access_count, c.thread, c.importance) == (7, 12, 3, "42", 0.25)
    assert (c.source, c.safety) == (pb.SOURCE_CHAT, pb.SAFETY_STATUS_REVIEW_NEEDED)
    assert (c.kind, c.layer, c.speaker) == ("decision", "session", "Caroline")


def test_embeddings_travel_packed_one_row_per_document() -> None:
    items = [Item("a", {"embedding": (1, 2.5, 3)}, "a", 0.5), Item("b", {}, "b", 0.5),
             Item("c", {"embedding": np.array([0.5, -1.0, 4.0])}, "c", 0.5),
             Item("d", {}, "d", 0.5, np.array([1, 2, 3], dtype=np.int32)),
             Item("e", {"embedding": [9.0, 9.0, 9.0]}, "e", 0.5, [0.25, 0.125, 2**-10])]
    req = build_request("q", items)
    assert req.embedding_dim == 3 and len(req.embeddings_f32) == 5 * 3 * 4
    # b has none: a zero row, what the server reads for a candidate without one; e's own field wins over metadata.
    assert _matrix(req) == [[1.0, 2.5, 3.0], [0.0, 0.0, 0.0], [0.5, -1.0, 4.0], [1.0, 2.0, 3.0],
                            [0.25, 0.125, 2**-10]]
    none = build_request("q", [Item("a", {}, "a", 0.5)])
    assert (none.embeddings_f32, none.embedding_dim) == (b"", 0)


def test_embeddings_are_rounded_to_float32_as_the_wire_carries_them() -> None:
    req = build_request("q", [Item("a", {"embedding": [0.1, 1 / 3]}, "a", 0.5)])
    # The nearest float32 values, written out: 0.1 = 13421773 / 2^27, 1/3 = 11184811 / 2^25.
    assert _matrix(req) == [[13421773 / 2**27, 11184811 / 2**25]]


def test_none_is_absent_and_absent_is_unset() -> None:
    c = _one({"importance": None, "position": None})
    assert not c.HasField("importance") and not c.HasField("position") and not c.HasField("created_at")


def test_keys_set_to_none_are_not_read() -> None:
    c = _one({"importance": "not a number"}, keys=MetadataKeys(importance=None))
    assert not c.HasField("importance")


def test_other_metadata_is_not_sent() -> None:
    assert not _one({"source": "docs/a.txt", "page": 3}).metadata


def test_scores_unit_keep_the_profiles_threshold_relative_ones_send_zero() -> None:
    items = [Item("a", {}, "a", 0.2), Item("b", {}, "b", 0.9)]
    unit = build_request("q", items)
    assert list(unit.columns.retrieval_scores) == [0.2, 0.9]
    assert not unit.HasField("relevance_threshold")
    minmax = build_request("q", [Item("a", {}, "a", 3.0), Item("b", {}, "b", 12.0), Item("c", {}, "c", 6.0)])
    assert list(minmax.columns.retrieval_scores) == [0.0, 1.0, 1 / 3]
    assert minmax.HasField("relevance_threshold") and minmax.relevance_threshold == 0.0
    order = build_request("q", [Item("a", {}, "a"), Item("b", {}, "b"), Item("c", {}, "c"), Item("d", {}, "d")])
    assert list(order.columns.retrieval_scores) == [1.0, 0.75, 0.5, 0.25]
    assert order.relevance_threshold == 0.0
    kept = build_request("q", [Item("a", {}, "a", 3.0), Item("b", {}, "b", 5.0)],
                         request={"relevanceThreshold": 0.3})
    assert kept.relevance_threshold == pytest.approx(0.3)
    forced = build_request("q", items, scores="minmax")
    assert list(forced.columns.retrieval_scores) == [0.0, 1.0]


def test_unit_scores_out_of_range_are_refused() -> None:
    with pytest.raises(MappingError, match=r"document 1 \(id 'b'\): Document.score: 1.5 is outside \[0, 1\]"):
        build_request("q", [Item("a", {}, "a", 0.5), Item("b", {}, "b", 1.5)], scores="unit",
                      score_field="Document.score")
    with pytest.raises(MappingError, match="a score must be a finite number"):
        build_request("q", [Item("a", {}, "a", "high")])


def test_embedding_dimensions_must_agree() -> None:
    items = [Item("a", {}, "a", 0.5, [1.0, 2.0]), Item("b", {}, "b", 0.5), Item("c", {}, "c", 0.5, [1.0])]
    with pytest.raises(MappingError, match=r"document 2 \(id 'c'\): embedding: 1 dimensions, while document 0"):
        build_request("q", items)


def test_request_extras_and_their_limits() -> None:
    req = build_request("q", [Item("a", {}, "a", 0.5)], top_k=3, profile="default",
                        request={"placement": "PLACEMENT_EDGES", "budget": {"maxTokens": 100}})
    assert (req.budget.max_items, req.budget.max_tokens, req.placement, req.profile) == \
        (3, 100, pb.PLACEMENT_EDGES, "default")
    for filled in ("candidates", "columns", "embeddingsF32", "embedding_dim"):
        with pytest.raises(ValueError, match=f"may not set \\['{filled}'\\]"):
            build_request("q", [], request={filled: []})
    with pytest.raises(ValueError, match="not a RankRequest"):
        build_request("q", [], request={"placment": 1})


def test_metadata_keys_validation() -> None:
    with pytest.raises(ValueError, match="unknown fields"):
        MetadataKeys(required=("created",))
    with pytest.raises(ValueError, match="whose key is None"):
        MetadataKeys(thread=None, required=("thread",))
    keys = MetadataKeys(thread="session", required=("thread",))
    assert MetadataKeys.of(keys.as_dict()) == keys
