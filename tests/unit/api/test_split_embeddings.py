"""Packed embeddings split off the wire before parsing: the rest parses to the same request, the matrix is copied
out on its own (nothing parsed keeps the request bytes), and a request the split cannot take apart is left to the
ordinary parse."""

from __future__ import annotations

import sys

import numpy as np
from google.protobuf.message import DecodeError
from hypothesis import given, settings
from hypothesis import strategies as st

from memrank._gen.v1 import ranking_pb2 as pb
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
    out.embeddings_f32 = bytes(parts[1])
    return out


def test_the_rest_parses_to_the_same_request() -> None:
    data = _packed().SerializeToString()
    assert _joined(data) == pb.RankRequest.FromString(data)


def test_the_matrix_is_copied_out_and_the_request_bytes_are_not_kept() -> None:
    data = _packed(400, 384).SerializeToString()
    parts = split_embeddings(data)
    assert parts is not None
    rest, matrix = parts
    assert type(matrix) is bytes and matrix == pb.RankRequest.FromString(data).embeddings_f32
    assert len(rest) + len(matrix) < len(data) < len(rest) + len(matrix) + 8  # the field's key and length only
    held = sys.getrefcount(data)
    parsed = parse_rank(data)
    assert sys.getrefcount(data) == held  # a view of the matrix would keep the whole request for the call
    assert parsed.embeddings_f32 == matrix


def test_fields_in_any_order_keep_the_parser_s_meaning() -> None:
    req = _packed()
    tail = pb.RankRequest(query="later query wins", budget=pb.Budget(max_tokens=9)).SerializeToString()  # merged
    for data in (req.SerializeToString() + tail, tail + req.SerializeToString(),
                 req.SerializeToString() + b"\xf8\x06\x01", b"\xf8\x06\x01" + req.SerializeToString()):  # unknown
        assert _joined(data) == pb.RankRequest.FromString(data)


def test_every_field_numbered_after_the_embeddings_survives_the_cut() -> None:
    """The columnar form (field 18, after embeddings_f32) with packed rows, and later fields set: the rest parses to
    the request without the matrix."""
    columnar = pb.RankRequest(query="q", embedding_dim=2, embeddings_f32=b"\x00" * 24, log_decision=True,
                              columns=pb.CandidateColumns(ids=["a", "b", "c"], contents=["x", "y", "z"]))
    later = [f for f in pb.RankRequest.DESCRIPTOR.fields if f.number > 14]
    assert {f.name for f in later} >= {"embedding_dim", "relevance_threshold", "log_decision", "columns"}
    for req in (columnar, pb.RankRequest(embedding_dim=2, embeddings_f32=b"\x01" * 8, relevance_threshold=0.0)):
        assert _joined(req.SerializeToString()) == req


def test_no_embeddings_a_repeated_field_or_no_parse_means_no_split() -> None:
    assert split_embeddings(pb.RankRequest(query="q").SerializeToString()) is None
    assert split_embeddings(pb.RankRequest(query="q", embedding_dim=4).SerializeToString()) is None
    assert split_embeddings(pb.RankRequest(query="q").SerializeToString() + b"\x72\x00") is None  # empty field 14
    repeated = pb.RankRequest(embeddings_f32=b"\x00" * 8).SerializeToString() + _packed().SerializeToString()
    assert split_embeddings(repeated) is None  # the last one wins: left to the parser
    assert split_embeddings(b"\x72\x05ab") is None  # truncated


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=24), st.binary(max_size=24), st.booleans())
def test_bytes_around_a_request_never_make_the_split_disagree_with_the_parser(head: bytes, junk: bytes,
                                                                               before: bool) -> None:
    """Where the whole parses, the split's rest parses to it without the matrix, and the matrix is the field the
    parser read; where the whole does not parse, neither does the rest (the error is the parser's)."""
    body = _packed(3, 2).SerializeToString()
    data = (head + body if before else body) + junk
    parts = split_embeddings(data)
    try:
        whole = pb.RankRequest.FromString(data)
    except DecodeError:
        if parts is not None:
            try:
                pb.RankRequest.FromString(parts[0])
            except DecodeError:
                return
            raise AssertionError("split parsed a request the parser refuses") from None
        return
    if parts is not None:
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


def test_the_runtime_message_is_let_go_after_conversion() -> None:
    """The runtime's parse lends the message to one call: after conversion handle_rank keeps only its header, the
    decision hook still reads the id and flag, and the answer is the one of a message that stays whole."""
    s = load_settings(env={})
    data = _packed(12, 8).SerializeToString()
    seen: list[pb.RankRequest] = []

    def decide(request: pb.RankRequest, *_rest: object) -> bool:
        seen.append(request)
        return request.log_decision

    call, policy = Call(1.767e9, None, b"k", decide=decide), Policy.of(s)
    kept = RankInput(pb.RankRequest.FromString(data))
    whole = handle_rank(kept, policy, call).SerializeToString()
    assert kept.request == pb.RankRequest.FromString(data)  # a caller's own input is left as it was
    parsed = parse_rank(data)
    assert parsed.single_use
    lent = handle_rank(parsed, policy, call).SerializeToString()
    assert lent == whole
    header = pb.RankRequest(request_id="r", query="kafka retry", log_decision=True, profile="default")
    assert parsed.request == header and seen[-1] == header
    assert pb.RankResponse.FromString(lent).decision_logged
