"""The columnar converter agrees with the per-candidate reference code; the candidate rules run on every request."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.convert import request_to_domain
from memrank.api.request_columns import CandidateColumns
from memrank.api.validate import validate_rank_request
from memrank.config import load_settings
from memrank.core.batch import CandidateInput, batch_from_rows
from memrank.core.errors import InvalidRequest
from tests.support.columnar import candidate_message, candidate_row
from tests.unit.api.test_convert import rows

LIMITS = load_settings(env={}).limits


def _same_dim(batch_rows: list[CandidateInput], dim: int) -> list[CandidateInput]:
    """One embedding dimension per request, as validation guarantees (missing embeddings stay missing)."""
    out = []
    for i, r in enumerate(batch_rows):
        emb = tuple(float(x) for x in np.linspace(-1, 1, dim) * (i + 1)) if r.embedding and dim else ()
        out.append(CandidateInput(**{f.name: getattr(r, f.name) for f in fields(r)} | {"id": f"{i}:{r.id}",
                                                                                        "embedding": emb}))
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(rows, max_size=6), st.integers(0, 3))
def test_columns_equal_the_row_path(batch_rows: list[CandidateInput], dim: int) -> None:
    cands = [candidate_message(r) for r in _same_dim(batch_rows, dim)]
    fast = CandidateColumns(cands).to_batch()
    slow = batch_from_rows([candidate_row(c) for c in cands])
    for f in fields(fast):
        if not f.compare:  # the memo: saved work, never an input
            continue
        a, b = getattr(fast, f.name), getattr(slow, f.name)
        if isinstance(a, np.ndarray) or a is None:
            assert (a is None and b is None) or (a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)), f.name
        elif f.name in ("facets", "stage_scores"):
            assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k], equal_nan=True) for k in a), f.name
        else:
            assert a == b, f.name


def test_an_ordinary_request_is_accepted() -> None:
    req = pb.RankRequest(candidates=[candidate_message(r) for r in _same_dim(
        [CandidateInput("a", content="x", retrieval_score=0.5, importance=0.2, embedding=(1.0,)),
         CandidateInput("b", content="y", facet_scores={"bm25": 2.0}, created_at=1.0, valid_from=1.0, valid_to=2.0,
                        embedding=(1.0,))], 4)])
    validate_rank_request(req, LIMITS)  # raises InvalidRequest naming any violation


def test_request_level_rules_run_beside_valid_candidates() -> None:
    req = pb.RankRequest(candidates=[candidate_message(CandidateInput("a", content="x"))], placement=99,
                         min_score=2.0, layers=[pb.LayerPolicy(name="")])
    with pytest.raises(InvalidRequest) as err:
        validate_rank_request(req, LIMITS)
    assert [v.field for v in err.value.violations] == ["placement", "min_score", "layers[0].name"]


def test_packed_embeddings_give_the_same_columns() -> None:
    matrix = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    per_candidate = pb.RankRequest(candidates=[pb.Candidate(id=f"c{i}", embedding=matrix[i].tolist())
                                               for i in range(3)])
    packed = pb.RankRequest(candidates=[pb.Candidate(id=f"c{i}") for i in range(3)],
                            embeddings_f32=matrix.astype("<f4").tobytes(), embedding_dim=4)
    validate_rank_request(packed, LIMITS)
    a = request_to_domain(per_candidate, 0.0)[0].embeddings
    b = request_to_domain(packed, 0.0)[0].embeddings
    assert a is not None and b is not None and a.dtype == b.dtype and np.array_equal(a, b)
    assert not b.flags.writeable and not b.flags.owndata  # a read-only view of the request's bytes


def test_a_call_reads_each_timestamp_field_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Validation and the conversion share one parse of every Timestamp column (the profile had
    counted the same parse under both callers)."""
    from memrank.api.call import Call, Policy, RankInput, handle_rank
    from memrank.api.request_columns import TIME_FIELDS

    read: list[str] = []
    real = CandidateColumns._time

    def counted(self: CandidateColumns, name: str) -> object:
        read.append(name)
        return real(self, name)

    monkeypatch.setattr(CandidateColumns, "_time", counted)
    cands = [candidate_message(CandidateInput(id=f"m{i}", content="kafka retry", created_at=1.7e9 - i,
                                               valid_from=1.6e9, valid_to=1.8e9)) for i in range(5)]
    handle_rank(RankInput(pb.RankRequest(query="kafka", candidates=cands)), Policy.of(load_settings(env={})),
                Call(1.7e9))
    assert sorted(read) == sorted(TIME_FIELDS)
