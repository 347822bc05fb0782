"""Paired converters: proto <-> domain round trips, enum mirrors, timestamps."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.convert import seconds_to_ts, ts_to_seconds
from memrank.core.batch import CandidateInput
from memrank.core.types import AdmissionDecision, DropReason, ExplainLevel, Placement, Safety, Source
from tests.support.columnar import candidate_message, candidate_row


@pytest.mark.parametrize(
    ("core", "proto", "prefix"),
    [
        (Source, pb.Source, "SOURCE_"),
        (Safety, pb.SafetyStatus, "SAFETY_STATUS_"),
        (Placement, pb.Placement, "PLACEMENT_"),
        (ExplainLevel, pb.ExplainLevel, "EXPLAIN_LEVEL_"),
        (AdmissionDecision, pb.AdmissionDecision, "ADMISSION_DECISION_"),
    ],
)
def test_core_enums_mirror_proto_enums(core: type, proto: object, prefix: str) -> None:
    proto_items = {name.removeprefix(prefix): value for name, value in proto.items()}  # type: ignore[attr-defined]
    assert {m.name: m.value for m in core} == proto_items  # type: ignore[attr-defined]


def test_drop_reasons_mirror_proto_with_kept_as_zero() -> None:
    proto_items = {name.removeprefix("DROP_REASON_"): v for name, v in pb.DropReason.items()}
    proto_items["KEPT"] = proto_items.pop("UNSPECIFIED")
    assert {m.name: m.value for m in DropReason} == proto_items


times = st.none() | st.floats(min_value=-1e10, max_value=1e10).map(lambda x: round(x, 3))
rows = st.builds(
    CandidateInput,
    id=st.text(min_size=1, max_size=8),
    layer=st.text(max_size=5),
    kind=st.sampled_from(["", "fact", "decision"]),
    content=st.text(max_size=30),
    retrieval_score=st.floats(0, 1),
    facet_scores=st.dictionaries(st.sampled_from(["bm25", "dense"]), st.floats(-5, 5), max_size=2),
    importance=st.none() | st.floats(0, 1),
    access_count=st.integers(0, 1000),
    token_count=st.integers(0, 5000),
    created_at=times, last_accessed_at=times, event_time=times, ingested_at=times, valid_from=times,
    valid_to=times,
    source=st.sampled_from([int(s) for s in Source]),
    provenance=st.text(alphabet="0123456789abcdef", max_size=8),
    safety=st.sampled_from([int(s) for s in Safety]),
    embedding=st.lists(st.floats(-1, 1, width=32), max_size=4).map(tuple),
    stage_scores=st.dictionaries(st.just("cross_encoder"), st.floats(-3, 3), max_size=1),
    metadata=st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2),
    thread=st.sampled_from(["", "session-1", "s2"]) | st.text(max_size=12),
    position=st.none() | st.sampled_from([0, 1, 2**53 - 1, 2**53]) | st.integers(0, 2**53),
    speaker=st.sampled_from(["", "Caroline", "Mélanie", "助手"]) | st.text(max_size=12),
)


@given(rows)
def test_candidate_round_trip(row: CandidateInput) -> None:
    back = candidate_row(candidate_message(row))
    for name in ("id", "layer", "kind", "content", "facet_scores", "importance", "access_count", "token_count",
                 "source", "provenance", "safety", "embedding", "stage_scores", "metadata", "thread", "position",
                 "speaker"):
        assert getattr(back, name) == getattr(row, name), name
    assert math.isclose(back.retrieval_score, row.retrieval_score)
    for name in ("created_at", "last_accessed_at", "event_time", "ingested_at", "valid_from", "valid_to"):
        a, b = getattr(row, name), getattr(back, name)
        assert (a is None and b is None) or (a is not None and b is not None and abs(a - b) < 1e-6), name


@given(st.integers(-62_135_596_800, 253_402_300_799), st.integers(0, 999_999_999))
def test_timestamp_seconds_round_trip_within_a_microsecond(seconds: int, nanos: int) -> None:
    from google.protobuf.timestamp_pb2 import Timestamp

    ts = Timestamp(seconds=seconds, nanos=nanos)
    back = seconds_to_ts(ts_to_seconds(ts))
    assert abs((back.seconds - seconds) * 1e9 + (back.nanos - nanos)) < 1e6 * max(1.0, abs(seconds) / 1e9)
    assert 0 <= back.nanos <= 999_999_999
