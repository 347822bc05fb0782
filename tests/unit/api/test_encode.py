"""Response building (outcome_to_proto): explain levels, and reasons read only for the breakdowns written."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any, overload

import pytest

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.encode import outcome_to_proto
from memrank.config import load_settings
from memrank.core.batch import CandidateInput, RankParams, batch_from_rows
from memrank.core.explain.outcome import RankOutcome
from memrank.core.pipeline import rank
from memrank.core.types import ExplainLevel

SETTINGS = load_settings(env={})
REF = 1_780_000_000.0


class Spy(Sequence[Any]):
    """A per-candidate sequence that records which candidates were read and refuses to be iterated whole."""

    def __init__(self, inner: Sequence[Any], read: set[int]) -> None:
        self.inner, self.read = inner, read

    @overload
    def __getitem__(self, i: int) -> Any: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Any]: ...
    def __getitem__(self, i: int | slice) -> Any:
        assert isinstance(i, int), "sliced"
        self.read.add(i)
        return self.inner[i]

    def __len__(self) -> int:
        return len(self.inner)

    def __iter__(self) -> Iterator[Any]:
        raise AssertionError("every candidate's reasons were read")


def _outcome() -> tuple[Any, RankOutcome, RankParams]:
    rows = [CandidateInput(id=f"m{i}", layer=("session", "durable")[i % 2], kind=("fact", "decision")[i % 3 == 0],
                           content=f"the user said thing {i % 7} about tea and {'coffee' if i % 2 else 'milk'}",
                           retrieval_score=(i * 37 % 100) / 100, importance=0.5, created_at=REF - 3600 * i,
                           safety=3 if i == 5 else 1)
            for i in range(40)]
    batch = batch_from_rows(rows)
    params = RankParams(query="tea coffee", reference_time=REF, max_items=6, max_tokens=200)
    return batch, rank(batch, params, SETTINGS.profiles, SETTINGS.layers), params


def _spied(o: RankOutcome, read: set[int]) -> RankOutcome:
    signals = tuple(replace(c, reasons=Spy(c.reasons, read)) for c in o.scores.signals)
    return replace(o, scores=replace(o.scores, signals=signals), drop_notes=Spy(o.drop_notes, read))


@pytest.mark.parametrize("explain", list(ExplainLevel))
def test_reasons_are_read_only_for_the_breakdowns_written(explain: ExplainLevel) -> None:
    batch, o, params = _outcome()
    p = replace(params, explain=explain)
    read: set[int] = set()
    spied = outcome_to_proto(_spied(o, read), batch, p, "r", "v")
    plain = outcome_to_proto(o, batch, p, "r", "v")
    assert spied.SerializeToString(deterministic=True) == plain.SerializeToString(deterministic=True)
    selected, everyone = set(o.ranked.tolist()), set(range(o.n))
    assert o.drop.any() and selected
    want = {ExplainLevel.FULL: everyone, ExplainLevel.NONE: set()}.get(explain, selected)
    assert read == want


def test_below_full_a_dropped_candidate_is_id_layer_reason_and_score() -> None:
    batch, o, params = _outcome()
    full = outcome_to_proto(o, batch, replace(params, explain=ExplainLevel.FULL), "r", "v")
    for explain in (ExplainLevel.UNSPECIFIED, ExplainLevel.SELECTED, ExplainLevel.NONE):
        resp = outcome_to_proto(o, batch, replace(params, explain=explain), "r", "v")
        assert len(resp.dropped) == len(full.dropped)
        for d, f in zip(resp.dropped, full.dropped, strict=True):
            assert not d.HasField("breakdown")
            assert (d.id, d.layer, d.reason, d.score) == (f.id, f.layer, f.reason, f.score)
            assert d.reason != pb.DROP_REASON_UNSPECIFIED
        assert resp.receipt == full.receipt


@pytest.mark.parametrize("explain", [ExplainLevel.SELECTED, ExplainLevel.FULL])
def test_each_breakdown_holds_its_own_candidates_numbers(explain: ExplainLevel) -> None:
    batch, o, params = _outcome()
    resp = outcome_to_proto(o, batch, replace(params, explain=explain), "r", "v")
    index = {cid: i for i, cid in enumerate(batch.ids)}
    ranked = o.ranked.tolist()
    entries = [(m.id, m.breakdown, ranked.index(index[m.id])) for m in resp.selected]
    entries += [(d.id, d.breakdown, None) for d in resp.dropped if d.HasField("breakdown")]
    assert len(entries) == (o.n if explain == ExplainLevel.FULL else len(ranked))
    for cid, b, r in entries:
        i = index[cid]
        assert [s.name for s in b.signals] == [c.name for c in o.scores.signals]
        for s, c in zip(b.signals, o.scores.signals, strict=True):
            assert (s.raw, s.normalized, s.weight, s.contribution) == (c.raw[i], c.normalized[i], c.weight,
                                                                      c.contribution[i])
            assert tuple(s.reasons) == c.reasons[i]
        assert (b.retrieval_score, b.combined_score, b.final_score) == (batch.retrieval[i], o.scores.combined[i],
                                                                        o.final[i])
        assert b.token_count == o.token_count[i] and b.token_count_estimated == o.token_estimated[i]
        assert tuple(b.reasons[:len(o.drop_notes[i])]) == o.drop_notes[i]
        assert b.covered_by == (batch.ids[o.covered_by[i]] if o.covered_by[i] >= 0 else "")
        assert b.HasField("bucket") == (r is not None)
        if r is not None:
            assert (b.bucket.index, b.bucket.lower, b.bucket.upper, b.bucket.prior_score) == (
                r, o.bucket_lower[r], o.bucket_upper[r], o.final[i])
