"""`memrank tune --log`: decision and feedback records from a live server become the dataset tuning on labelled
requests builds, and the join rules (by decision id, by request id, merged, deduplicated, counted) hold."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memrank.client import RankingClient
from memrank.config import DecisionLogSettings, load_settings
from memrank.evaluation.data import load_conversations
from memrank.grpc.server import create_server
from memrank.tuning import Metric, Settings, TuningError, cross_validate
from memrank.tuning.locomo import load_locomo, requests
from memrank.tuning.logs import LogStats, join, load_logs
from memrank.tuning.queries import base_profile
from tests.support import locomo_fixture
from tests.support.servers import loopback_settings

pytest.importorskip("bm25s", reason="the eval extra is not installed")

SETTINGS = load_settings(env={})
DEFAULT = base_profile(SETTINGS.profiles, "default")
BASE = np.array([s.weight for s in DEFAULT.signals])


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """The fixture conversations replayed through a live server with the decision log on, gold feedback sent."""
    folder = tmp_path_factory.mktemp("logs")
    data, npz = locomo_fixture.write(folder)
    path = folder / "decisions.jsonl"
    replay(data, npz, path, "default", 1)
    return data, npz, path


def replay(data: Path, npz: Path, path: Path, profile: str, grade: float, profiles: Any = None) -> None:
    """Every fixture question ranked under ``profile`` by a live server logging to ``path``, the gold evidence
    sent back as feedback with ``grade``; ``profiles`` (a config's) replace the built-in ones when given."""
    s = loopback_settings()
    if profiles is not None:
        s = replace(s, profiles=profiles)
    running = create_server(replace(s, decision_log=DecisionLogSettings(enabled=True, sink="file", path=str(path))))
    try:
        with RankingClient(f"127.0.0.1:{running.port}") as c:
            for conv in load_conversations(data, npz):
                for q, req in requests(conv, profile):
                    req.request_id = q.key
                    c.record_feedback(c.rank(req), dict.fromkeys(q.evidence, grade))
    finally:
        running.stop(5)


def test_the_log_gives_the_dataset_and_the_fit_of_the_labelled_requests(logged: tuple[Path, Path, Path]) -> None:
    data, npz, path = logged
    direct = load_locomo(load_conversations(data, npz), DEFAULT, SETTINGS.limits)
    from_log, stats = load_logs([path], DEFAULT)
    assert (stats.decisions, stats.feedback, stats.labelled, stats.unlabelled) == (20, 20, 20, 0)
    assert [q.key for q in from_log.queries] == [q.key for q in direct.queries]
    assert [q.group for q in from_log.queries] == [q.group for q in direct.queries]
    for x, y in zip(from_log.queries, direct.queries, strict=True):
        assert np.array_equal(x.features, y.features)  # the logged signals are the ones the tuner computes
        assert np.array_equal(x.eligible, y.eligible) and np.array_equal(x.grades, y.grades)
        assert np.array_equal(x.tokens, y.tokens)
    a = cross_validate(from_log, Metric.parse("recall@5"), BASE, folds=2, settings=Settings(seed=1))
    b = cross_validate(direct, Metric.parse("recall@5"), BASE, folds=2, settings=Settings(seed=1))
    assert a.weights.tolist() == b.weights.tolist()
    assert a.tuned_out_of_fold == b.tuned_out_of_fold and a.base_out_of_fold == b.base_out_of_fold


def test_tune_log_cli_reports_what_it_read_and_writes_a_profile(logged: tuple[Path, Path, Path],
                                                                 tmp_path: Path) -> None:
    _, _, path = logged
    extra = tmp_path / "extra.jsonl"  # a decision nobody labelled, and feedback on nothing logged
    first = json.loads(path.read_text().splitlines()[0])
    extra.write_text(json.dumps(first | {"decision_id": "e" * 64, "request_id": "toy-9/q0"}) + "\n"
                     + json.dumps(feedback("f" * 64, decision_id="d" * 64, labels={"x": 1})) + "\n")
    out = tmp_path / "tuned.yaml"
    run = subprocess.run([sys.executable, "-m", "memrank.cli", "tune", "--log", str(path), "--log", str(extra),
                          "--out", str(out), "--folds", "2", "--no-progress", "--holdout", "0"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert ("21 decisions, 21 feedback records, 20 decisions with feedback, 1 without (ignored), "
            "1 feedback without its decision in the logs") in run.stdout
    assert "20 queries in 4 groups" in run.stdout
    check = subprocess.run([sys.executable, "-m", "memrank.cli", "serve", "--config", str(out), "--print-config"],
                           capture_output=True, text=True)
    assert check.returncode == 0 and "tuned" in check.stdout, check.stderr


def decision(did: str, rid: str, ids: list[str], outcome: list[str] | None = None) -> dict[str, Any]:
    n = len(ids)
    signals = {s.name: {"raw": [0.5] * n, "normalized": [0.1 * (i + 1) for i in range(n)],
                        "contribution": [0.0] * n} for s in DEFAULT.signals}
    return {"schema": "memrank.decision.v1", "decision_id": did, "request_id": rid, "profile": "default",
            "weights": [{"signal": s.name, "weight": s.weight, "normalization": s.normalization}
                        for s in DEFAULT.signals],
            "candidates": {"count": n, "id": ids, "signals": signals, "outcome": outcome or ["selected"] * n,
                           "token_count": [10] * n}}


def feedback(fid: str, decision_id: str | None = None, request_id: str | None = None,
             labels: dict[str, int] | None = None) -> dict[str, Any]:
    return {"schema": "memrank.feedback.v1", "feedback_id": fid, "decision_id": decision_id, "request_id": request_id,
            "labels": [{"candidate_id": k, "relevance": v} for k, v in (labels or {}).items()]}


def test_join_rules() -> None:
    d1, d2, d3, d4 = (decision(c * 64, rid, ["a", "b", "c"]) for c, rid in
                      (("1", "s1/t1"), ("2", "s1/t2"), ("3", "dup"), ("4", "dup")))
    fbs = [
        feedback("a" * 64, decision_id="1" * 64, labels={"a": 1, "b": 2}),
        feedback("b" * 64, request_id="s1/t1", labels={"b": 0, "c": 3}),  # merges into d1, b replaced
        feedback("b" * 64, request_id="s1/t1", labels={"a": 0}),  # same feedback_id: counted once
        feedback("c" * 64, request_id="dup", labels={"a": 1}),  # two decisions carry "dup": ambiguous
        feedback("d" * 64, request_id="nowhere", labels={"a": 1}),  # orphaned
        feedback("e" * 64, decision_id="3" * 64, labels={"zz": 2}),  # a label outside the candidates
    ]
    stats = LogStats()
    joined = join([d1, d2, d3, d4], fbs, stats)
    assert [(d["decision_id"][0], labels) for d, labels in joined] == [("1", {"a": 1, "b": 0, "c": 3}),
                                                                        ("3", {"zz": 2})]
    assert (stats.duplicates, stats.ambiguous, stats.orphaned, stats.labelled, stats.unlabelled) == (1, 1, 1, 2, 2)


def test_queries_take_gates_groups_and_outside_labels_from_the_records(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    d1 = decision("1" * 64, "s1/t1", ["a", "b", "c"], ["selected", "safety_gated", "redundant"])
    d2 = decision("2" * 64, "", ["a"])
    path.write_text("\n".join(json.dumps(r) for r in [
        d1, d2, feedback("a" * 64, decision_id="1" * 64, labels={"b": 2, "zz": 1}),
        feedback("b" * 64, decision_id="2" * 64, labels={"a": 3})]) + "\n")
    dataset, _ = load_logs([path], DEFAULT)
    q1, q2 = dataset.queries
    assert q1.eligible.tolist() == [True, False, True]
    assert q1.features[:, 1].tolist() == [0.0] * len(DEFAULT.signals)  # gated: no features, as the scorer gives
    assert q1.features[0].tolist() == [0.1, 0.0, 0.30000000000000004]
    assert q1.grades.tolist() == [0.0, 2.0, 0.0] and q1.outside.tolist() == [1.0] and q1.relevant == 2
    assert (q1.group, q2.group) == ("s1", "2" * 64)  # request id prefix; no request id: the decision itself


def test_clear_errors(tmp_path: Path) -> None:
    empty = tmp_path / "none.jsonl"
    empty.write_text(json.dumps(decision("1" * 64, "r", ["a"])) + "\n")
    with pytest.raises(TuningError, match=r"no labelled decision.*1 decisions, 0 feedback records"):
        load_logs([empty], DEFAULT)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n{not json\n")
    with pytest.raises(TuningError, match=r"bad.jsonl:2: not JSON"):
        load_logs([bad], DEFAULT)
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"schema": "something.else"}) + "\n")
    with pytest.raises(TuningError, match=r"other.jsonl:1: not a decision log record"):
        load_logs([other], DEFAULT)
    changed = decision("1" * 64, "r", ["a"])
    changed["weights"][0]["normalization"] = "rank"  # logged under another normaliser: not the base's columns
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(json.dumps(changed) + "\n" + json.dumps(feedback("a" * 64, decision_id="1" * 64,
                                                                      labels={"a": 1})) + "\n")
    with pytest.raises(TuningError, match="1 labelled decisions without the base's signals and normalisers"):
        load_logs([mixed], DEFAULT)


def test_eval_log_reports_the_answer_and_reweighted_profiles(logged: tuple[Path, Path, Path], tmp_path: Path) -> None:
    data, npz, path = logged
    out = tmp_path / "report.json"
    run = subprocess.run([sys.executable, "-m", "memrank.cli", "eval", "--log", str(path), "--out", str(out),
                          "--profiles", "default,generative-agents"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    (group,) = json.loads(out.read_text())["groups"]
    rows = {r["row"]: r for r in group["rows"]}
    # As answered, by hand from the records: the selected ids in rank order against the gold evidence.
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    gold = {r["request_id"]: [x["candidate_id"] for x in r["labels"]] for r in recs if "labels" in r}
    recall = []
    for r in (r for r in recs if r["schema"] == "memrank.decision.v1"):
        c = r["candidates"]
        top = [i for _, i in sorted((k, i) for i, k in zip(c["id"], c["rank"], strict=True) if k)][:5]
        recall.append(len(set(top) & set(gold[r["request_id"]])) / len(gold[r["request_id"]]))
    assert rows["as answered"]["recall@5"] == pytest.approx(sum(recall) / len(recall))
    direct = load_locomo(load_conversations(data, npz), DEFAULT, SETTINGS.limits)
    from memrank.tuning.dataset import Stack
    from memrank.tuning.metrics import Objective

    want = Objective(Stack.of(direct.queries, len(BASE)), Metric.parse("recall@5"))(BASE)
    assert rows["default (re-weighted, reference)"]["recall@5"] == pytest.approx(want)
    assert group["not_comparable"] == {"generative-agents": "signal recency is not in the log"}
    assert "re-weighted rows rank the logged normalised signals" in run.stdout


STARTER = """\
profiles:
  starter:
    base: default
    signals:
      - {name: relevance, weight: 0.5, normalization: min_max}
      - {name: lexical, weight: 0.3}
      - {name: context, weight: 0.1}
      - {name: speaker, weight: 0.1}
      - {name: importance, weight: 0.000001}
      - {name: thread, weight: 0.0}
      - {name: length, weight: 0.0}
      - {name: hop, weight: 0.0}
      - {name: statement, weight: 0.0}
"""


def test_tune_log_from_a_config_profile(tmp_path: Path) -> None:
    """A profile from a config file produces the log (every signal logged, those of weight 0 too), `tune --log
    --config --base` fits it, and the written file carries the base so it loads on its own."""
    config = tmp_path / "starter.yaml"
    config.write_text(STARTER)
    data, npz = locomo_fixture.write(tmp_path)
    path = tmp_path / "decisions.jsonl"
    settings = load_settings(str(config), env={})
    starter = base_profile(settings.profiles, "starter")
    replay(data, npz, path, "starter", 2, settings.profiles)
    first = json.loads(path.read_text().splitlines()[0])
    assert first["profile"] == "starter"
    assert list(first["candidates"]["signals"]) == [sig.name for sig in starter.signals]  # all nine, weight 0 too
    direct = load_locomo(load_conversations(data, npz), starter, settings.limits)
    from_log, _ = load_logs([path], starter)
    for x, y in zip(from_log.queries, direct.queries, strict=True):
        assert np.array_equal(x.features, y.features)
    assert from_log.queries[0].features[5:].any()  # thread, length, hop, statement: logged though they weigh 0
    out = tmp_path / "tuned.yaml"
    cmd = [sys.executable, "-m", "memrank.cli", "tune", "--log", str(path), "--config", str(config), "--base",
           "starter", "--model", "linear", "--out", str(out), "--folds", "2", "--no-progress", "--holdout", "0"]
    run = subprocess.run(cmd, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "base starter, model linear" in run.stdout and "20 queries in 4 groups" in run.stdout
    loaded = load_settings(str(out), env={}).profiles  # the file alone: starter copied in, tuned based on it
    assert loaded["starter"] == starter
    assert loaded["tuned"].diversity_lambda == starter.diversity_lambda
    assert [sig.name for sig in loaded["tuned"].signals] == [sig.name for sig in starter.signals]
    clash = subprocess.run([*cmd, "--name", "starter"], capture_output=True, text=True)
    assert clash.returncode == 2 and "already has a profile of that name" in clash.stderr
    missing = subprocess.run([*cmd, "--base", "nope"], capture_output=True, text=True)
    assert missing.returncode == 2 and "unknown base profile 'nope'" in missing.stderr
