"""The client builds its requests itself: dicts go straight into the columnar form (no JSON conversion), messages
go as they are, and the server answers a dict exactly as it answers the same request parsed from JSON."""

from __future__ import annotations

import datetime

import numpy as np
import pytest
from google.protobuf import json_format
from google.protobuf.timestamp_pb2 import Timestamp

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.call import Call, Policy, RankInput, handle_rank
from memrank.client.requests import candidates_of, in_candidate_words, rank_request, time_column, time_of
from memrank.config import load_settings

SETTINGS = load_settings(env={})
CANDIDATES = [
    {"id": "m1", "content": "The user prefers green tea, no sugar.", "retrievalScore": 0.82, "kind": "preference",
     "createdAt": "2026-05-30T09:00:00Z", "importance": 0.7, "facetScores": {"bm25": 7.5, "dense": 0.8},
     "source": "SOURCE_USER_PROVIDED", "metadata": {"topic": "tea"}, "thread": "s1", "position": "3",
     "rerankerScore": 3.25},
    {"id": "m2", "content": "thanks!", "retrievalScore": 0.40, "lastAccessedAt": "2026-05-31T10:00:00.5+02:00",
     "facetScores": {"dense": 0.1}, "safety": 2, "stageScores": {"cross": 0.3}, "validTo": "2027-01-01T00:00:00Z"},
    {"id": "m3", "content": "Tea: oolong on weekends", "retrievalScore": 0.6, "speaker": "Ada", "tokenCount": 12,
     "reranker_score": "-1.5"},
]
REQUEST = {"requestId": "r", "query": "what tea does the user like?", "referenceTime": "2026-06-01T12:00:00Z",
           "budget": {"maxItems": 2}, "explain": "EXPLAIN_LEVEL_FULL", "candidates": CANDIDATES}
MATRIX = np.array([[1, 0, 0], [0.6, 0.8, 0], [0, 0, 1]], dtype=np.float32)


def _answer(req: pb.RankRequest) -> bytes:
    return bytes(handle_rank(RankInput(req), Policy.of(SETTINGS), Call(1.767e9, b"p", b"k")).SerializeToString())


def test_a_dict_is_sent_as_columns_without_json(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_a: object, **_k: object) -> None:
        raise AssertionError("the client converted through JSON")

    monkeypatch.setattr(json_format, "ParseDict", refuse)
    monkeypatch.setattr(json_format, "Parse", refuse)
    req = rank_request(REQUEST, MATRIX)
    assert not req.candidates and list(req.columns.ids) == ["m1", "m2", "m3"]
    assert req.embedding_dim == 3 and req.embeddings_f32 == MATRIX.astype("<f4").tobytes()
    assert list(req.columns.facet_names) == ["bm25", "dense"]
    assert list(req.columns.importance_present) == [True, False, False]


def test_a_dict_gets_the_answer_of_the_same_request_parsed_from_json() -> None:
    parsed = json_format.ParseDict(REQUEST, pb.RankRequest())
    for c, row in zip(parsed.candidates, MATRIX, strict=True):
        c.embedding.extend(row.tolist())
    assert _answer(rank_request(REQUEST, MATRIX)) == _answer(parsed)
    with_rows = dict(REQUEST, candidates=[dict(c, embedding=r.tolist()) for c, r in zip(CANDIDATES, MATRIX,
                                                                                         strict=True)])
    assert _answer(rank_request(with_rows)) == _answer(parsed)


def test_snake_case_keys_are_the_same_fields() -> None:
    snake = {"request_id": "r", "query": "q", "candidates": [
        {"id": "a", "retrieval_score": 0.5, "created_at": "2026-05-30T09:00:00Z", "facet_scores": {"x": 1.0}}]}
    camel = {"requestId": "r", "query": "q", "candidates": [
        {"id": "a", "retrievalScore": 0.5, "createdAt": "2026-05-30T09:00:00Z", "facetScores": {"x": 1.0}}]}
    assert rank_request(snake) == rank_request(camel)


def test_a_field_under_both_names_takes_the_later_key_and_none_is_unsent() -> None:
    both = {"candidates": [{"id": "a", "retrievalScore": 0.1, "retrieval_score": 0.7},
                           {"id": "b", "retrieval_score": 0.2, "retrievalScore": 0.9},
                           {"id": "c", "retrievalScore": None, "source": "SOURCE_CHAT"},
                           {"id": "d", "source": 2}]}
    cols = rank_request(both).columns
    assert list(cols.retrieval_scores) == [0.7, 0.9, 0.0, 0.0]  # written out: the later key, unsent is 0
    assert list(cols.sources) == [0, 0, pb.SOURCE_CHAT, 2]  # an enum by name or number


def test_a_message_is_sent_as_it_is() -> None:
    msg = json_format.ParseDict(REQUEST, pb.RankRequest())
    assert rank_request(msg) is msg


def test_the_columns_read_back_as_the_candidates_sent() -> None:
    parsed = json_format.ParseDict(REQUEST, pb.RankRequest())
    assert candidates_of(rank_request(REQUEST)) == list(parsed.candidates)


def test_an_unknown_key_is_named() -> None:
    with pytest.raises(ValueError, match="'retrieval'"):
        rank_request({"candidates": [{"id": "a", "retrieval": 0.5}]})


@pytest.mark.parametrize(("value", "want"), [
    ("1970-01-01T00:00:01Z", (1, 0)),
    ("1970-01-01T00:00:01.000000001Z", (1, 1)),
    ("1970-01-01T01:00:00.25+01:00", (0, 250_000_000)),
    (datetime.datetime(1970, 1, 2, tzinfo=datetime.UTC), (86_400, 0)),
    (1.5, (1, 500_000_000)),
    ({"seconds": 7, "nanos": 9}, (7, 9)),
])
def test_times_as_protobuf_json_and_python_say_them(value: object, want: tuple[int, int]) -> None:
    assert time_of(value) == want


def _protobuf_json(value: str) -> tuple[int, int]:
    stamp = Timestamp()
    stamp.FromJsonString(value)  # protobuf's own reading of its JSON form: the reference
    return stamp.seconds, stamp.nanos


@pytest.mark.parametrize("widths", [(0, 3, 6, 9), (0,), (3,), (6,), (9,)])  # of mixed shapes, or of one
def test_a_column_of_utc_times_reads_as_protobuf_reads_each(widths: tuple[int, ...]) -> None:
    rng = np.random.default_rng(7)
    seconds = rng.integers(-62_135_596_800, 253_402_300_800, 500)
    values = []
    for i, s in enumerate(seconds.tolist()):
        text = (datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=s)).isoformat(timespec="seconds")
        digits = widths[i % len(widths)]
        values.append(f"{text}{'.' if digits else ''}{str(rng.integers(10 ** 9)).zfill(9)[:digits]}Z")
    if len(widths) > 1:
        values[:3] = ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z", "1970-01-01T00:00:00.5Z"]
    got = time_column(values)
    assert list(zip(*got, strict=True)) == [_protobuf_json(v) for v in values]


@pytest.mark.parametrize("odd", [
    "2026-01-01T01:00:00+01:00",  # an offset
    "2026-01-01T00:00:00.123456789123Z",  # more digits than nanoseconds: cut, as time_of cuts them
    None,  # a candidate that sent no time
    datetime.datetime(2026, 1, 1, 0, 0, 0, 750_000, tzinfo=datetime.UTC),  # not a string
])
def test_a_column_with_any_other_value_reads_as_time_of_reads_each(odd: object) -> None:
    column = ["2026-01-01T00:00:00.25Z", odd, "2025-12-31T23:59:59Z"]
    want = [(0, 0) if v is None else time_of(v) for v in column]
    assert list(zip(*time_column(column), strict=True)) == want
    assert want[0] == (1_767_225_600, 250_000_000) and want[2] == (1_767_225_599, 0)


@pytest.mark.parametrize("column", [
    ["2026-01-01T00:00:00.", "5Z"],  # one stamp split over two values
    ["2026-01-01T00:00:00Z\n2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"],  # two stamps in one value
])
def test_values_that_are_stamps_only_together_are_refused_by_the_value(column: list[str]) -> None:
    with pytest.raises(ValueError, match="Invalid isoformat string"):
        time_column(column)


@pytest.mark.parametrize("bad", ["2026-02-30T00:00:00Z", "0000-01-01T00:00:00Z", "2026-01-01T24:00:00Z"])
def test_a_column_with_an_impossible_time_is_refused_by_the_value(bad: str) -> None:
    with pytest.raises(ValueError):
        time_column(["2026-01-01T00:00:00Z", bad])
    with pytest.raises(ValueError):
        time_of(bad)


@pytest.mark.parametrize(("sent", "written"), [
    ("columns.retrieval_scores[3]", "candidates[3].retrieval_score"),
    ('columns.facet_scores[2]["bm25"]', 'candidates[2].facet_scores["bm25"]'),
    ("columns.created_at[0]", "candidates[0].created_at"),
    ("duplicate of columns.ids[0] ('a')", "duplicate of candidates[0].id ('a')"),
    ("columns.positions[1]", "candidates[1].position"),
    ("columns.reranker_scores[2]", "candidates[2].reranker_score"),
    ("columns.ids", "candidates"),
    ("columns.facet_names", "candidates.facet_scores"),
    ("query", "query"),
])
def test_a_refusal_of_a_dict_names_the_dict_s_fields(sent: str, written: str) -> None:
    assert in_candidate_words(sent) == written


@pytest.mark.parametrize("scores", [{"bm25": "NaN"}, {"bm25": float("nan")}, {"": 0.5}])
def test_what_columns_cannot_say_goes_per_candidate(scores: dict[str, object]) -> None:
    """NaN is "no score" in the columnar matrix: a NaN score (or a name the server refuses) is sent on its
    candidate, so the server refuses it there."""
    req = rank_request({"candidates": [{"id": "a"}, {"id": "b", "facetScores": scores}]})
    assert not req.HasField("columns") and [c.id for c in req.candidates] == ["a", "b"]


def test_a_reranker_score_is_a_column_nan_where_unsent() -> None:
    cols = rank_request(REQUEST).columns
    assert cols.reranker_scores[0] == 3.25 and cols.reranker_scores[2] == -1.5
    assert np.isnan(cols.reranker_scores[1])  # m2 sent none: NaN, "no score" (the proto's columns comment)
    assert not len(rank_request({"candidates": [{"id": "a"}]}).columns.reranker_scores)


@pytest.mark.parametrize("score", ["NaN", float("nan")])
def test_a_nan_reranker_score_goes_per_candidate_for_the_server_to_refuse(score: object) -> None:
    req = rank_request({"candidates": [{"id": "a", "rerankerScore": 1.0}, {"id": "b", "rerankerScore": score}]})
    assert not req.HasField("columns") and req.candidates[1].HasField("reranker_score")


def test_own_embeddings_of_several_dimensions_go_per_candidate() -> None:
    """The packed matrix needs one dimension: candidates whose own embeddings differ go as they are, each with its
    embedding, for the server to name the odd one."""
    req = rank_request({"candidates": [{"id": "a", "embedding": [1.0, 0.0]}, {"id": "b", "embedding": [1.0]}]})
    assert not req.HasField("columns") and not req.embeddings_f32
    assert [list(c.embedding) for c in req.candidates] == [[1.0, 0.0], [1.0]]


def test_a_time_column_with_a_non_ascii_digit_reads_as_time_of_reads_it() -> None:
    with pytest.raises(ValueError, match="Invalid isoformat string"):
        time_column(["2026-01-01T00:00:00Z", "2026-01-01T00:00:0\u0661Z"])  # ARABIC-INDIC DIGIT ONE
