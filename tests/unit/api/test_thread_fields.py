"""Candidate.thread, .position and .speaker: their limits at the edge and their columns in the Batch."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.convert import request_to_domain
from memrank.api.request_columns import CandidateColumns
from memrank.api.validate import validate_admission_request, validate_rank_request
from memrank.config import Limits, load_settings
from memrank.core.batch import CandidateInput, batch_from_rows
from memrank.core.errors import InvalidRequest
from tests.support.columnar import candidate_row

LIMITS = load_settings(env={}).limits


def _refused(cand: pb.Candidate, limits: Limits = LIMITS) -> list[tuple[str, str]]:
    """The violations of a request whose second candidate is ``cand`` (the first is ordinary)."""
    req = pb.RankRequest(candidates=[pb.Candidate(id="ok", thread="t", position=0, speaker="s"), cand])
    with pytest.raises(InvalidRequest) as err:
        validate_rank_request(req, limits)
    return [(v.field, v.description) for v in err.value.violations]


def _accepted(cand: pb.Candidate) -> bool:
    req = pb.RankRequest(candidates=[cand])
    validate_rank_request(req, LIMITS)  # raises when refused
    return True


def test_the_limits_are_configured_at_128_bytes() -> None:
    assert (LIMITS.max_thread_bytes, LIMITS.max_speaker_bytes) == (128, 128)


@pytest.mark.parametrize("name", ["thread", "speaker"])
def test_an_overlong_text_field_names_the_field_and_the_limit(name: str) -> None:
    assert _refused(pb.Candidate(id="x", **{name: "a" * 129})) == [
        (f"candidates[1].{name}", f"at most 128 bytes (limits.max_{name}_bytes)")]


@pytest.mark.parametrize("name", ["thread", "speaker"])
def test_text_limits_count_utf8_bytes_not_characters(name: str) -> None:
    assert _accepted(pb.Candidate(id="x", **{name: "a" * 128}))
    assert _accepted(pb.Candidate(id="x", **{name: "é" * 64}))  # 2 bytes each: 128
    assert [f for f, _ in _refused(pb.Candidate(id="x", **{name: "é" * 65}))] == [f"candidates[1].{name}"]
    assert [f for f, _ in _refused(pb.Candidate(id="x", **{name: "👩" * 33}))] == [f"candidates[1].{name}"]


@pytest.mark.parametrize("name", ["thread", "speaker"])
def test_a_configured_text_limit_is_the_one_enforced_and_named(name: str) -> None:
    limits = replace(LIMITS, **{f"max_{name}_bytes": 4})
    assert _refused(pb.Candidate(id="x", **{name: "abcde"}), limits) == [
        (f"candidates[1].{name}", f"at most 4 bytes (limits.max_{name}_bytes)")]
    configured = load_settings(env={}, overrides={f"limits.max_{name}_bytes": 4}).limits
    assert getattr(configured, f"max_{name}_bytes") == 4


@pytest.mark.parametrize("position", [-1, -(2**63), 2**53 + 1, 2**63 - 1])
def test_a_position_outside_0_to_2_pow_53_is_refused_with_its_value(position: int) -> None:
    assert _refused(pb.Candidate(id="x", position=position)) == [
        ("candidates[1].position", f"must be in [0, 9007199254740992] (2^53), got {position}")]


@pytest.mark.parametrize("position", [0, 1, 2**53 - 1, 2**53])
def test_positions_at_the_bounds_are_accepted_by_both_validation_paths(position: int) -> None:
    assert _accepted(pb.Candidate(id="x", position=position))


def test_position_without_thread_and_thread_without_position_are_valid() -> None:
    assert _accepted(pb.Candidate(id="x", position=3))
    assert _accepted(pb.Candidate(id="x", thread="session-1"))


def test_admission_names_the_candidate_field() -> None:
    req = pb.ScoreAdmissionRequest(candidate=pb.Candidate(id="x", thread="t" * 129, position=-5, speaker="s" * 129))
    with pytest.raises(InvalidRequest) as err:
        validate_admission_request(req, LIMITS)
    assert [v.field for v in err.value.violations] == ["candidate.thread", "candidate.position", "candidate.speaker"]


CANDS = [
    pb.Candidate(id="a", thread="session-1", position=4, speaker="Caroline"),
    pb.Candidate(id="b"),
    pb.Candidate(id="c", thread="session-2", position=0),
    pb.Candidate(id="d", position=2**53, speaker="Mélanie 助手"),
    pb.Candidate(id="e", thread="session-1", speaker="Caroline"),
]


def test_the_columns_hold_the_values_in_candidate_order_nan_where_unset() -> None:
    batch, _ = request_to_domain(pb.RankRequest(candidates=CANDS), 0.0)
    assert batch.threads == ("session-1", "", "session-2", "", "session-1")
    assert batch.speakers == ("Caroline", "", "", "Mélanie 助手", "Caroline")
    assert batch.positions.dtype == np.float64
    assert np.array_equal(batch.positions, [4.0, np.nan, 0.0, 2.0**53, np.nan], equal_nan=True)
    assert int(batch.positions[3]) == 2**53  # exact
    assert not batch.positions.flags.writeable


def test_the_row_path_builds_the_same_columns() -> None:
    fast = CandidateColumns(CANDS).to_batch()
    slow = batch_from_rows([candidate_row(c) for c in CANDS])
    assert fast.threads == slow.threads and fast.speakers == slow.speakers
    assert np.array_equal(fast.positions, slow.positions, equal_nan=True)


def test_a_batch_without_the_fields_has_empty_threads_and_speakers_and_nan_positions() -> None:
    batch = batch_from_rows([CandidateInput("a"), CandidateInput("b")])
    assert batch.threads == ("", "") and batch.speakers == ("", "")
    assert np.isnan(batch.positions).all() and batch.positions.dtype == np.float64


def test_take_carries_the_columns_in_the_given_order() -> None:
    picked = CandidateColumns(CANDS).to_batch().take([4, 0, 3])
    assert picked.ids == ("e", "a", "d")
    assert picked.threads == ("session-1", "session-1", "")
    assert picked.speakers == ("Caroline", "Caroline", "Mélanie 助手")
    assert np.array_equal(picked.positions, [np.nan, 4.0, 2.0**53], equal_nan=True)
    assert not picked.positions.flags.writeable
