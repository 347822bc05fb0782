"""Packed embeddings split off the wire before parsing: the rest parses to the same request, and a request
the split cannot take apart is left to the ordinary parse."""

from __future__ import annotations

import numpy as np
from google.protobuf.message import DecodeError
from hypothesis import given, settings
from hypothesis import strategies as st

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.handle import Call, handle_rank
from memrank.api.wire import split_embeddings
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
    direct = handle_rank(pb.RankRequest.FromString(data), s, Call(1.767e9, None, b"k")).SerializeToString()
    split = handle_rank(pb.RankRequest.FromString(parts[0]), s,
                        Call(1.767e9, None, b"k", embeddings_f32=parts[1])).SerializeToString()
    assert split == direct
