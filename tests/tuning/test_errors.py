"""Every refusal of `memrank tune`: exit status 2 and a message on stderr naming the line, field, id or value."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from google.protobuf import json_format

from memrank.cli import main
from tests.tuning import synthetic

W = np.array([0.2, 0.7, 0.0, 0.0, 0.0, 0.1])


def _lines(count: int, seed: int = 1) -> list[dict[str, object]]:
    return [json.loads(synthetic.labels_line(s)) for s in synthetic.queries(seed, count, W, groups=count)]


def _write(tmp_path: Path, docs: list[object]) -> Path:
    path = tmp_path / "labels.jsonl"
    path.write_text("".join((d if isinstance(d, str) else json.dumps(d)) + "\n" for d in docs), encoding="utf-8")
    return path


def _run(capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str) -> str:
    out = tmp_path / "tuned.yaml"
    code = main(["tune", *args, "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert not out.exists()
    return err


def test_too_few_labelled_queries_states_the_minimum(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = _lines(4)
    docs[3]["relevant"] = {}  # nothing relevant: skipped, so 3 remain
    err = _run(capsys, tmp_path, "--labels", str(_write(tmp_path, docs)), "--folds", "2")
    assert "3 labelled queries with a relevant candidate; at least 4 (2 x 2 folds)" in err
    err = _run(capsys, tmp_path, "--labels", str(_write(tmp_path, _lines(6))))  # 5 folds by default
    assert "at least 10 (2 x 5 folds)" in err


def test_a_label_naming_an_id_not_in_the_request(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = _lines(3)
    docs[1]["relevant"] = {"m1": 1, "nope": 2}
    path = _write(tmp_path, docs)
    err = _run(capsys, tmp_path, "--labels", str(path))
    assert f"{path}:2: relevant names id(s) that are not candidates of the request: 'nope'" in err


def test_a_request_that_fails_validation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = _lines(3)
    docs[2]["request"]["candidates"][4]["retrievalScore"] = 1.5  # type: ignore[index]
    path = _write(tmp_path, docs)
    err = _run(capsys, tmp_path, "--labels", str(path))
    assert (f"{path}:3: invalid request: candidates[4].retrieval_score: must be finite and in [0, 1], got 1.5"
            in err)
    docs = _lines(2)
    docs[0]["request"]["candidates"][1]["id"] = "m0"  # type: ignore[index]
    err = _run(capsys, tmp_path, "--labels", str(_write(tmp_path, docs)))
    assert ":1: invalid request: candidates[1].id: duplicate of candidates[0].id ('m0')" in err


def test_unknown_base_profile_lists_the_known_ones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _run(capsys, tmp_path, "--labels", str(_write(tmp_path, _lines(2))), "--base", "nosuch")
    assert "unknown base profile 'nosuch'; known profiles: agent-observer, assistant, default," in err


def test_a_blend_base_cannot_be_a_weighted_sum(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _run(capsys, tmp_path, "--labels", str(_write(tmp_path, _lines(2))), "--base", "lians-recall")
    assert "base profile 'lians-recall' combines with formula 'blend'" in err


def test_unknown_metric(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _run(capsys, tmp_path, "--labels", str(_write(tmp_path, _lines(2))), "--metric", "mrr@10")
    assert "memrank tune: unknown metric 'mrr@10'; known: recall@K, ndcg@K, budget-recall@TOKENS" in err


@pytest.mark.parametrize(("line", "message"), [
    ("{not json", ":1: not JSON: Expecting property name enclosed in double quotes"),
    ('["a"]', ":1: expected an object with \"request\" and \"relevant\", got list"),
    ('{"request": {}}', ':1: "relevant" is missing'),
    ('{"request": {"quer": "x"}, "relevant": {}}', ':1: "request" is not a RankRequest'),
    ('{"request": {}, "relevant": {"m0": -1}}', ":1: relevant['m0']: the grade must be a finite number >= 0, got -1"),
    ('{"request": {}, "relevant": {}, "weight": 1}', ":1: unknown key(s) 'weight'; known: request, relevant, group"),
])
def test_malformed_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, message: str) -> None:
    err = _run(capsys, tmp_path, "--labels", str(_write(tmp_path, [line])))
    assert message in err


def test_flags_that_do_not_fit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(_write(tmp_path, _lines(4)))
    assert "at least 2 folds" in _run(capsys, tmp_path, "--labels", path, "--folds", "1")
    assert "--embeddings goes with --data" in _run(capsys, tmp_path, "--labels", path, "--embeddings", "x.npz")
    assert "no-such.jsonl" in _run(capsys, tmp_path, "--labels", str(tmp_path / "no-such.jsonl"))
    one_group = [dict(d, group="same") for d in _lines(4)]
    assert "1 query group(s)" in _run(capsys, tmp_path, "--labels", str(_write(tmp_path, one_group)))


def test_the_request_field_round_trips_as_protobuf_json() -> None:
    # The fixture lines are what a caller writes: MessageToDict of a RankRequest parses back to the same message.
    s = synthetic.queries(1, 1, W)[0]
    again = json_format.ParseDict(json.loads(synthetic.labels_line(s))["request"], type(s.request)())
    assert again == s.request

