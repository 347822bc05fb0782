"""The two request forms are one request: the same candidates sent as ``candidates`` or as ``columns`` get
byte-identical responses, or the same violations named in the form they came in."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from google.protobuf import json_format
from hypothesis import HealthCheck, assume, given, settings

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.call import Call, Policy, RankInput, handle_rank
from memrank.config import load_settings
from memrank.core.errors import InvalidRequest
from tests.support import hostile
from tests.support.columnar import column_path, representable, to_columnar

SETTINGS = load_settings(env={})
VECTORS = sorted((Path(__file__).resolve().parents[2] / "vectors").glob("*.json"))


def _answer(req: pb.RankRequest) -> tuple[str, object]:
    """The response bytes, or the refusal: its type and (field, description) pairs."""
    try:
        response = handle_rank(RankInput(req), Policy.of(SETTINGS), Call(1.767e9, b"p", b"k"))
        return "ok", response.SerializeToString()
    except InvalidRequest as err:
        return type(err).__name__, [(v.field, v.description) for v in err.violations]


def _as_columns(refusal: object) -> object:
    """A per-candidate refusal as the columnar form words it: every candidate path in field and description."""
    def path(m: re.Match[str]) -> str:
        return column_path(m.group(0)) if m.group(2) else f"columns.ids[{m.group(1)}]"

    def named(text: str) -> str:
        return re.sub(r'candidates\[(\d+)\](\.\w+(\["[^"]*"\])?)?', path, text)

    assert isinstance(refusal, list)
    totals = {"candidates": "columns.ids", "candidates.facet_scores": "columns.facet_names"}
    return [(totals.get(f, named(f)), named(d)) for f, d in refusal]


def _agree(req: pb.RankRequest) -> None:
    kind, per_candidate = _answer(req)
    columnar = _answer(to_columnar(req))
    facets, limit = len({k for c in req.candidates for k in c.facet_scores}), SETTINGS.limits.max_facets
    if kind != "LimitExceeded" and facets > limit:  # the columnar form names them once, before any row is read
        said = f"{facets} distinct facets; at most {limit} (limits.max_facets)"
        assert columnar == ("InvalidRequest", [("columns.facet_names", said)])
        return
    assert columnar == (kind, per_candidate if kind == "ok" else _as_columns(per_candidate))


@pytest.mark.parametrize("path", VECTORS, ids=[p.stem for p in VECTORS])
def test_every_vector_gets_the_same_answer_in_either_form(path: Path) -> None:
    req = json_format.ParseDict(json.loads(path.read_text())["request"], pb.RankRequest())
    assert representable(req)
    _agree(req)


def test_a_columnar_request_is_answered_not_ignored() -> None:
    """An ordinary columnar request ranks its candidates (a form the server ignored would select none)."""
    req = to_columnar(pb.RankRequest(query="kafka retry", candidates=[
        pb.Candidate(id="a", content="kafka retry policy", retrieval_score=0.9),
        pb.Candidate(id="b", content="lunch menu", retrieval_score=0.2)]))
    kind, data = _answer(req)
    assert kind == "ok" and isinstance(data, bytes)
    response = pb.RankResponse.FromString(data)
    assert {m.id for m in response.selected} | {d.id for d in response.dropped} == {"a", "b"}
    assert [m.id for m in response.selected][:1] == ["a"]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(hostile.rank_requests())
def test_hostile_requests_get_the_same_answer_in_either_form(req: pb.RankRequest) -> None:
    assume(representable(req) and all(math.isfinite(x) for c in req.candidates for x in c.embedding))
    _agree(req)


def _refused(req: pb.RankRequest) -> list[tuple[str, str]]:
    kind, violations = _answer(req)
    assert kind == "InvalidRequest" and isinstance(violations, list)
    return violations


def test_both_forms_at_once_are_refused_naming_both() -> None:
    req = pb.RankRequest(candidates=[pb.Candidate(id="a")], columns=pb.CandidateColumns(ids=["b"]))
    said = "one form per request: candidates or columns, not both"
    assert _refused(req) == [("candidates", said), ("columns", said)]


def test_a_column_of_the_wrong_length_is_named() -> None:
    cols = pb.CandidateColumns(ids=["a", "b", "c"], contents=["x"], retrieval_scores=[0.5, 0.5, 0.5])
    cols.created_at.seconds.extend([1, 2])
    assert _refused(pb.RankRequest(columns=cols)) == [
        ("columns.contents", "1 values; one per id (3) or none"),
        ("columns.created_at.seconds", "2 values; one per id (3) or none")]


def test_facet_names_are_checked_once_and_the_matrix_must_fit_them() -> None:
    cols = pb.CandidateColumns(ids=["a", "b"], facet_names=["bm25", "", "bm25"], facet_scores=[1.0] * 5)
    assert _refused(pb.RankRequest(columns=cols)) == [
        ("columns.facet_names[1]", "names must be non-empty"),
        ("columns.facet_names[2]", "duplicate of columns.facet_names[0]"),
        ("columns.facet_scores", "5 values; len(ids) x len(facet_names) = 6")]


def test_more_facet_names_than_the_limit_are_refused_before_any_is_read() -> None:
    names = [f"f{j}" for j in range(SETTINGS.limits.max_facets + 1)]
    cols = pb.CandidateColumns(ids=["a"], facet_names=names, facet_scores=[0.5] * len(names))
    assert _refused(pb.RankRequest(columns=cols)) == [
        ("columns.facet_names", f"{len(names)} distinct facets; at most {SETTINGS.limits.max_facets} "
                                "(limits.max_facets)")]


def test_a_columnar_violation_names_the_column_and_the_row() -> None:
    cols = pb.CandidateColumns(ids=["a", "a", "c", "d"], retrieval_scores=[0.1, 0.2, 0.3, 1.5],
                               facet_names=["dense"], facet_scores=[0.1, math.nan, math.inf, 0.2])
    assert _refused(pb.RankRequest(columns=cols)) == [
        ("columns.ids[1]", "duplicate of columns.ids[0] ('a')"),
        ("columns.facet_scores[2][\"dense\"]", "must be finite, got inf"),
        ("columns.retrieval_scores[3]", "must be finite and in [0, 1], got 1.5")]


def test_unset_rows_of_an_optional_column_are_unset() -> None:
    """importance_present false: the row's value is ignored (not checked, not used), as an unset field."""
    per_candidate = pb.RankRequest(query="q", candidates=[pb.Candidate(id="a", importance=0.25), pb.Candidate(id="b")])
    columnar = pb.RankRequest(query="q", columns=pb.CandidateColumns(
        ids=["a", "b"], importance=[0.25, 7.0], importance_present=[True, False]))
    assert _answer(columnar) == _answer(per_candidate)


@pytest.mark.parametrize("n", [0, 1, 40])
def test_sizes_agree(n: int) -> None:
    _agree(pb.RankRequest(query="q", candidates=[
        pb.Candidate(id=f"m{i}", content=f"note {i} about kafka", retrieval_score=i / max(n, 1),
                     embedding=[float(i % 3), 1.0, 0.5]) for i in range(n)]))
