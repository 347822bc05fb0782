"""`tune --log` out of core (memrank.tuning.fleet): globs, directories and gzip partitions read by DuckDB give the
counts worked out by hand and the dataset and weights of the in-memory reader (tuning.logs)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memrank.config import load_settings
from memrank.tuning import Metric, Settings, TuningError, cross_validate, fleet
from memrank.tuning.logs import load_logs
from memrank.tuning.queries import base_profile

pytest.importorskip("duckdb", reason="the fleet extra is not installed")

DEFAULT = base_profile(load_settings(env={}).profiles, "default")
BASE = np.array([s.weight for s in DEFAULT.signals])


@pytest.fixture(scope="module")
def live_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture conversations replayed through a live server logging decisions, gold feedback sent."""
    from tests.support import locomo_fixture
    from tests.tuning.test_logs import replay

    folder = tmp_path_factory.mktemp("live")
    data, npz = locomo_fixture.write(folder)
    path = folder / "decisions.jsonl"
    replay(data, npz, path, "default", 1)
    return path


def t(second: int) -> str:
    return f"2026-12-06T10:00:{second:02d}.000000Z"


def decision(did: str, rid: str, ids: list[str], second: int, normalization: str | None = None,
             outcome: list[str] | None = None) -> dict[str, Any]:
    n = len(ids)
    signals = {s.name: {"raw": [0.5] * n, "normalized": [0.1 * (i + 1) for i in range(n)],
                        "contribution": [0.0] * n} for s in DEFAULT.signals}
    weights = [{"signal": s.name, "weight": s.weight, "normalization": s.normalization} for s in DEFAULT.signals]
    if normalization is not None:
        weights[0]["normalization"] = normalization
    return {"schema": "memrank.decision.v1", "decision_id": did * 64, "request_id": rid, "server_time": t(second),
            "profile": "default", "weights": weights,
            "candidates": {"count": n, "id": ids, "signals": signals, "outcome": outcome or ["selected"] * n,
                           "token_count": [10 + i for i in range(n)]}}


def feedback(fid: str, second: int, decision_id: str | None = None, request_id: str | None = None,
             labels: dict[str, int] | None = None) -> dict[str, Any]:
    return {"schema": "memrank.feedback.v1", "feedback_id": fid * 64, "server_time": t(second),
            "decision_id": decision_id and decision_id * 64, "request_id": request_id,
            "labels": [{"candidate_id": k, "relevance": v} for k, v in (labels or {}).items()]}


def jsonl(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records)


def write_partitions(root: Path) -> None:
    """Two hours of a two-pod fleet: plain and gzip files, a decision and a feedback delivered twice, a torn line
    and a line of garbage."""
    d1 = decision("1", "s1/t1", ["a", "b", "c"], 1, outcome=["selected", "safety_gated", "redundant"])
    hour0 = [d1, decision("2", "s1/t2", ["a", "b"], 2), decision("3", "dup", ["a"], 3),
             decision("4", "dup", ["a"], 4), decision("5", "s2/t1", ["a"], 5),
             feedback("a", 10, decision_id="1", labels={"a": 1, "b": 2}),
             feedback("b", 11, request_id="s1/t1", labels={"b": 0, "c": 3})]  # later: b 2 -> 0, c added
    hour1 = [decision("6", "s3/t1", ["a"], 6, normalization="rank"), decision("7", "s4/t1", ["a", "b"], 7),
             feedback("b", 11, request_id="s1/t1", labels={"b": 0, "c": 3}),  # a retry's second delivery
             feedback("c", 12, request_id="dup", labels={"a": 1}),  # two decisions carry "dup": ambiguous
             feedback("d", 13, request_id="nowhere", labels={"a": 1}),  # orphaned
             feedback("e", 14, decision_id="2", labels={"a": 1, "zz": 2}),  # zz: not a candidate
             feedback("f", 15, decision_id="6", labels={"a": 1}),  # logged under another normaliser
             feedback("g", 16, decision_id="7", labels={"a": 0}),  # nothing relevant
             d1]  # the same decision again, from a retried upload
    (root / "dt=2026-12-06" / "hour=10").mkdir(parents=True)
    (root / "dt=2026-12-06" / "hour=11").mkdir(parents=True)
    (root / "dt=2026-12-06" / "hour=10" / "pod-a-0.jsonl").write_text(jsonl(hour0[:5]))
    (root / "dt=2026-12-06" / "hour=10" / "pod-b-0.jsonl.gz").write_bytes(gzip.compress(
        (jsonl(hour0[5:]) + '{"schema":"memrank.feedb\n').encode()))
    (root / "dt=2026-12-06" / "hour=11" / "pod-a-1.jsonl.gz").write_bytes(gzip.compress(
        (jsonl(hour1[:4]) + "\n<html>oops</html>\n" + jsonl(hour1[4:])).encode()))


def test_counts_and_columns_by_hand(tmp_path: Path) -> None:
    write_partitions(tmp_path)
    dataset, stats, report = fleet.load([str(tmp_path)], DEFAULT)
    # 7 distinct decisions (d1 twice); 8 feedback lines, "b" twice; c ambiguous, d orphaned; labelled d1 d2 d6 d7
    assert (stats.decisions, stats.feedback, stats.duplicates, stats.ambiguous, stats.orphaned) == (7, 8, 1, 1, 1)
    assert (stats.labelled, stats.unlabelled, stats.other_signals, stats.nothing_relevant) == (4, 3, 1, 1)
    assert (report.files, report.duplicate_decisions, report.usable, report.sampled) == (3, 1, 2, 2)
    hour10, hour11 = tmp_path / "dt=2026-12-06" / "hour=10", tmp_path / "dt=2026-12-06" / "hour=11"
    assert report.bad == [f"{hour10 / 'pod-b-0.jsonl.gz'}:3: torn record (cut short)",
                          f"{hour11 / 'pod-a-1.jsonl.gz'}:6: not JSON (Expecting value)"]
    q1, q2 = dataset.queries
    assert (q1.key, q1.group, q2.key, q2.group) == ("s1/t1", "s1", "s1/t2", "s1")
    assert q1.grades.tolist() == [1.0, 0.0, 3.0] and q1.outside.tolist() == []  # b: 2 then 0, the later wins
    assert q1.eligible.tolist() == [True, False, True]
    assert q1.features[0].tolist() == [0.1, 0.0, 0.30000000000000004]  # gated b: no features
    assert q1.tokens.tolist() == [10, 11, 12]
    assert q2.grades.tolist() == [1.0, 0.0] and q2.outside.tolist() == [2.0]


def test_sample_is_a_budget_fixed_by_the_seed(tmp_path: Path) -> None:
    write_partitions(tmp_path)
    for budget in (1, 2):
        keys = {seed: [q.key for q in fleet.load([str(tmp_path)], DEFAULT, budget, seed)[0].queries]
                for seed in range(6)}
        assert all(len(k) == budget for k in keys.values())
        assert keys == {seed: [q.key for q in fleet.load([str(tmp_path)], DEFAULT, budget, seed)[0].queries]
                        for seed in range(6)}
    one = {fleet.load([str(tmp_path)], DEFAULT, 1, seed)[0].queries[0].key for seed in range(6)}
    assert one == {"s1/t1", "s1/t2"}  # both are drawn by some seed


def test_the_live_log_as_fleet_partitions_tunes_as_the_single_file(tmp_path: Path,
                                                                  live_log: Path) -> None:
    """The live server's log cut into gzip partitions plus a second delivery of one of them: the same dataset
    and the same fitted weights as the in-memory reader on the original file."""
    lines = live_log.read_text().splitlines(keepends=True)
    for i, start in enumerate(range(0, len(lines), 7)):
        part = tmp_path / "logs" / f"hour={i:02d}"
        part.mkdir(parents=True)
        (part / f"pod-{i}.jsonl.gz").write_bytes(gzip.compress("".join(lines[start:start + 7]).encode()))
    (tmp_path / "logs" / "hour=00" / "pod-0-retry.jsonl").write_text("".join(lines[:7]))
    direct, ref = load_logs([live_log], DEFAULT)
    fleet_set, stats, report = fleet.load([str(tmp_path / "logs" / "**" / "*.jsonl*")], DEFAULT)
    assert (stats.decisions, stats.labelled, report.duplicate_decisions, report.bad) == (20, 20, 4, [])
    assert (ref.decisions, ref.labelled) == (20, 20) and stats.duplicates == 3  # 7 lines: 4 decisions, 3 feedback
    for x, y in zip(fleet_set.queries, direct.queries, strict=True):
        assert (x.key, x.group) == (y.key, y.group)
        for name in ("features", "eligible", "grades", "tokens", "outside"):
            assert np.array_equal(getattr(x, name), getattr(y, name)), (x.key, name)
    a = cross_validate(fleet_set, Metric.parse("recall@5"), BASE, folds=2, settings=Settings(seed=1))
    b = cross_validate(direct, Metric.parse("recall@5"), BASE, folds=2, settings=Settings(seed=1))
    assert a.weights.tolist() == b.weights.tolist()


def test_cli_says_what_it_read_skipped_deduplicated_and_sampled(tmp_path: Path) -> None:
    write_partitions(tmp_path / "logs")
    out = tmp_path / "tuned.yaml"
    run = subprocess.run([sys.executable, "-m", "memrank.cli", "tune", "--log", str(tmp_path / "logs" / "**"),
                          "--out", str(out), "--folds", "2", "--no-progress", "--sample-queries", "5",
                          "--holdout", "0"],
                         capture_output=True, text=True)
    # two usable queries in one group cannot be cross-validated: the error comes after what was read
    assert run.returncode == 2 and "cross-validation needs at least 2" in run.stderr, run.stderr
    assert f"1 torn record line skipped ({tmp_path / 'logs' / 'dt=2026-12-06' / 'hour=10' / 'pod-b-0.jsonl.gz'}:3)" \
        in run.stdout
    assert "read 3 files in " in run.stdout and "s, skipped 1 other unreadable line" in run.stdout
    assert "pod-a-1.jsonl.gz:6: not JSON" in run.stdout
    assert "dropped 1 duplicate decision record, sampled 2 of 2 usable labelled decisions (--sample-queries 5)" \
        in run.stdout


def test_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(TuningError, match=r"--log .*nothing\*\.jsonl\.gz: no such file, or nothing matches"):
        fleet.load([str(tmp_path / "nothing*.jsonl.gz")], DEFAULT)
    with pytest.raises(TuningError, match="--sample-queries 0: expected 1 or more"):
        fleet.load([str(tmp_path)], DEFAULT, budget=0)
    (tmp_path / "one.jsonl").write_text(jsonl([decision("1", "r", ["a"], 1)]))
    with pytest.raises(TuningError, match=r"no labelled decision.*1 decisions, 0 feedback records"):
        fleet.load([str(tmp_path)], DEFAULT)


def test_missing_extra_is_named(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl.gz").write_bytes(gzip.compress(b"\n"))
    code = ("import sys; sys.modules['duckdb'] = None; from memrank.cli import main; "
            f"sys.exit(main(['tune', '--log', {str(tmp_path / 'a.jsonl.gz')!r}, '--out', 'x.yaml']))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert "needs the fleet extra (pip install 'memrank-sidecar[fleet]')" in run.stderr
