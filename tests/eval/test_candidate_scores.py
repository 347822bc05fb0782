"""`memrank eval --candidate-scores reranker=FILE`: the scores ride on the requests, are counted, and a bad option
or file is refused naming it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memrank.evaluation.candidate_scores import CandidateScoresError, load, parse_option
from memrank.evaluation.data import load_conversations
from memrank.evaluation.requests import build_request
from tests.support import eval_fixture as fixture

pytest.importorskip("bm25s", reason="the eval extra is not installed")


def _eval(folder: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    data, npz = fixture.write(folder)
    out = folder / "r.json"
    proc = subprocess.run([sys.executable, "-m", "memrank.cli", "eval", "--data", str(data), "--embeddings", str(npz),
                           "--out", str(out), "--profiles", "default,with-reranker", "--baselines", "llamaindex",
                           "--no-progress", *extra], capture_output=True, text=True, timeout=180)
    return proc, out


def test_the_scores_are_sent_counted_and_leave_default_unchanged(tmp_path: Path) -> None:
    conv = fixture.conversation()
    turns = [t["id"] for t in conv["turns"]]  # type: ignore[union-attr, index]
    overall = [i for i, q in enumerate(conv["questions"]) if q["category"] != 5]  # type: ignore[arg-type, index]
    # Every turn but the first scored for the first two overall questions; the rest of the questions have none.
    scored = {f"toy-1/q{i}": {t: float(k) for k, t in enumerate(turns) if k} for i in overall[:2]}
    (tmp_path / "scores.json").write_text(json.dumps(scored))
    proc, out = _eval(tmp_path, "--candidate-scores", f"reranker={tmp_path / 'scores.json'}")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    pool = doc["pool"]["mean_size"]
    assert pool == len(turns)  # a toy conversation: every turn is in every pool
    sent, got = len(overall) * len(turns), 2 * (len(turns) - 1)
    assert doc["candidate_scores"]["reranker"] == {
        "file": str(tmp_path / "scores.json"), "questions_in_file": 2, "questions_with_scored_candidates": 2,
        "candidates_sent": sent, "candidates_with_score": got, "share_with_score": round(got / sent, 4)}
    assert f"reranker scores: {got} of {sent} candidates" in proc.stdout
    (tmp_path / "plain").mkdir()
    plain, plain_out = _eval(tmp_path / "plain")
    assert plain.returncode == 0, plain.stderr
    rows = {r["profile"]: r for r in json.loads(plain_out.read_text())["rows"]}
    assert {r["profile"]: r for r in doc["rows"]}["default"] == rows["default"]
    assert "candidate_scores" not in json.loads(plain_out.read_text())


def test_a_request_carries_a_score_only_where_the_file_has_one(tmp_path: Path) -> None:
    data, npz = fixture.write(tmp_path)
    conv = load_conversations(data, npz)[0]
    pool = np.arange(len(conv.turns))
    scores = {conv.turns[0].id: -2.5, conv.turns[3].id: 7.0}
    req = build_request(conv, 0, pool, np.ones(len(pool)), None, "with-reranker", reranker=scores)
    got = {c.id: c.reranker_score for c in req.candidates if c.HasField("reranker_score")}
    assert got == scores


@pytest.mark.parametrize(("spec", "said"), [
    ("reranker", "expected KIND=FILE"), ("cohere=x.json", "unknown kind 'cohere' \\(known: reranker\\)")])
def test_a_bad_option_is_named(spec: str, said: str) -> None:
    with pytest.raises(CandidateScoresError, match=said):
        parse_option([spec])


@pytest.mark.parametrize(("content", "said"), [
    ("[1, 2]", "expected an object"), ('{"c/q0": [1]}', "\\['c/q0'\\] must be an object"),
    ('{"c/q0": {"t1": "high"}}', "\\['c/q0'\\]\\['t1'\\] must be a finite number, got 'high'"),
    ('{"c/q0": {"t1": NaN}}', "must be a finite number, got nan"), ("{", "cannot read it as JSON")])
def test_a_bad_file_is_named_with_the_key(tmp_path: Path, content: str, said: str) -> None:
    path = tmp_path / "s.json"
    path.write_text(content)
    with pytest.raises(CandidateScoresError, match=said):
        load({"reranker": path})


def test_the_cli_refuses_a_bad_option_with_exit_2(tmp_path: Path) -> None:
    proc, out = _eval(tmp_path, "--candidate-scores", "reranker=" + str(tmp_path / "missing.json"))
    assert proc.returncode == 2 and "--candidate-scores reranker=" in proc.stderr and not out.exists()
