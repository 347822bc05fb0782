"""Packed embeddings split off the wire before parsing: the rest parses to the same request, and a request
the split cannot take apart is left to the ordinary parse."""

from __future__ import annotations

import numpy as np
import pytest
from google.protobuf.message import DecodeError
from hypothesis import given, settings
from hypothesis import strategies as st

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api import wire
from memrank.api.call import Call, Policy, RankInput, handle_rank
from memrank.api.wire import parse_rank, split_embeddings
from memrank.config import load_settings


def _packed(n: int = 6, dim: int = 4) -> pb.RankRequest:
    rng = np.random.default_rng(n)
    req = pb.RankRequest(request_id="r", query="kafka retry", profile="default", embedding_dim=dim,
                         embeddings_f32=rng.standard_normal((n, dim)).astype("<f4").tobytes(),
                         budget=pb.Budget(max_items=3), min_score=0.0, log_decision=True)
    req.candidates.extend(pb.Candidate(id=f"m{i}", content=f"kafka retry number {i}", retrieval_score=0.5,
                                       metadata={"k": "v"}) for i in range(n))
    req.layers.add(name="session", share=0.5)
    req.weight_overrides["relevance"] = 0.3
    req.reference_time.seconds = 1_767_000_000
    return req


def _joined(data: bytes) -> pb.RankRequest:
    parts = split_embeddings(data)
    assert parts is not None
    out = pb.RankRequest.FromString(parts[0])
    assert not out.embeddings_f32
    out.embeddings_f32 = parts[1]
    return out


def test_the_rest_parses_to_the_same_request() -> None:
    data = _packed().SerializeToString()
    assert _joined(data) == pb.RankRequest.FromString(data)


def test_field_order_and_repeats_keep_the_parser_s_meaning() -> None:
    req = _packed()
    first = pb.RankRequest(embeddings_f32=b"\x00" * 8).SerializeToString()  # a repeated field 14: the last wins
    tail = pb.RankRequest(query="later query wins", budget=pb.Budget(max_tokens=9)).SerializeToString()  # merged
    data = first + req.SerializeToString() + tail
    assert _joined(data) == pb.RankRequest.FromString(data)
    reordered = tail + req.SerializeToString()  # embeddings before other fields
    assert _joined(reordered) == pb.RankRequest.FromString(reordered)


def test_no_embeddings_or_no_parse_means_no_split() -> None:
    assert split_embeddings(pb.RankRequest(query="q").SerializeToString()) is None
    assert split_embeddings(b"\x72\x05ab") is None  # truncated
    assert split_embeddings(pb.RankRequest(query="q").SerializeToString() + b"\x12\x01\xff") is None  # bad UTF-8


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_garbage_after_a_request_splits_only_where_the_parser_agrees(junk: bytes) -> None:
    data = _packed(3, 2).SerializeToString() + junk
    try:
        whole = pb.RankRequest.FromString(data)
    except DecodeError:  # the split must not succeed where the parse fails
        parts = split_embeddings(data)
        if parts is not None:  # the top level parsed: the candidates then fail the ordinary parse
            try:
                pb.RankRequest.FromString(parts[0])
            except DecodeError:
                return
            raise AssertionError("split parsed a request the parser refuses") from None
        return
    if whole.embeddings_f32:
        assert _joined(data) == whole


def test_a_split_request_gets_the_same_answer_bytes() -> None:
    s = load_settings(env={})
    data = _packed(12, 8).SerializeToString()
    parts = split_embeddings(data)
    assert parts is not None
    call, policy = Call(1.767e9, None, b"k"), Policy.of(s)
    direct = handle_rank(RankInput(pb.RankRequest.FromString(data)), policy, call).SerializeToString()
    parsed = parse_rank(data)
    assert parsed.embeddings_f32 == parts[1] and not parsed.request.embeddings_f32  # the split took the matrix
    split = handle_rank(parsed, policy, call).SerializeToString()
    assert split == direct


def _from_the_parse_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(_top: object) -> None:
        raise AssertionError("the embeddings were read from the parse")

    monkeypatch.setattr(wire, "_read", refuse)


@pytest.mark.parametrize("shape", [(1, 4), (6, 4), (400, 384)])
def test_a_serialiser_s_layout_is_cut_from_the_wire_bytes(shape: tuple[int, int],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Fields in number order, nothing unknown (what every serialiser writes): the matrix comes out of the request
    bytes, not out of the parse (whose copy is gone by then), with the fields numbered after it (embedding_dim,
    relevance_threshold, log_decision) set or not."""
    _from_the_parse_fails(monkeypatch)
    monkeypatch.setattr(wire, "_SPLIT_FROM", 0)
    req = _packed(*shape)
    for threshold in (None, 0.25):
        if threshold is not None:
            req.relevance_threshold = threshold
        for logged in (True, False):
            req.log_decision = logged
            data = req.SerializeToString()
            assert _joined(data) == pb.RankRequest.FromString(data) == req


def test_other_layouts_read_the_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the bytes are not the rest with one embeddings field where a serialiser puts it, the field is read
    from the parse: a repeated field 14, a field written after the embeddings out of order, unknown fields."""
    monkeypatch.setattr(wire, "_SPLIT_FROM", 0)
    req = _packed()
    reads: list[object] = []
    real = wire._read
    monkeypatch.setattr(wire, "_read", lambda top: reads.append(top) or real(top))
    body = req.SerializeToString()
    layouts = [pb.RankRequest(embeddings_f32=b"\x00" * 8).SerializeToString() + body,
               body + pb.RankRequest(query="later").SerializeToString(),
               body + b"\xf8\x06\x01",  # field 111, unknown
               b"\xf8\x06\x01" + body]
    for data in layouts:
        assert _joined(data) == pb.RankRequest.FromString(data)
    assert len(reads) == len(layouts)


def test_a_dimension_without_a_matrix_is_no_split(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire, "_SPLIT_FROM", 0)
    assert split_embeddings(pb.RankRequest(query="q", embedding_dim=4).SerializeToString()) is None
    empty_field = pb.RankRequest(query="q").SerializeToString() + b"\x72\x00" + \
        pb.RankRequest(embedding_dim=4).SerializeToString()
    assert split_embeddings(empty_field) is None


def test_every_field_numbered_after_the_embeddings_keeps_the_cut_from_the_wire(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The columnar form (field 18, after embeddings_f32) with packed rows, and each later field set alone: the
    matrix still comes out of the request bytes, and the rest parses to the request without it."""
    _from_the_parse_fails(monkeypatch)
    monkeypatch.setattr(wire, "_SPLIT_FROM", 0)
    columnar = pb.RankRequest(query="q", embedding_dim=2, embeddings_f32=b"\x00" * 24, log_decision=True,
                              columns=pb.CandidateColumns(ids=["a", "b", "c"], contents=["x", "y", "z"]))
    later = [f for f in pb.RankRequest.DESCRIPTOR.fields if f.number > 14]
    assert {f.name for f in later} >= {"embedding_dim", "relevance_threshold", "log_decision", "columns"}
    for req in (columnar, pb.RankRequest(embedding_dim=2, embeddings_f32=b"\x01" * 8, relevance_threshold=0.0)):
        data = req.SerializeToString()
        assert _joined(data) == req


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=24), st.binary(max_size=24), st.booleans())
def test_bytes_around_a_request_keep_the_parser_s_meaning_when_cut_from_the_wire(head: bytes, junk: bytes,
                                                                                  before: bool) -> None:
    """Where the cut from the wire bytes applies (any size here), bytes before or after a request never make the
    split disagree with the parser: it splits where the parser reads the same embeddings, or reads the parse."""
    saved, wire._SPLIT_FROM = wire._SPLIT_FROM, 0
    try:
        body = _packed(3, 2).SerializeToString()
        data = (head + body if before else body) + junk
        try:
            whole = pb.RankRequest.FromString(data)
        except DecodeError:
            return
        parts = split_embeddings(data)
        if whole.embeddings_f32:
            assert _joined(data) == whole
        else:
            assert parts is None
    finally:
        wire._SPLIT_FROM = saved
