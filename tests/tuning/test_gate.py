"""`memrank tune --log ... --require-better`: the gate passes a profile that is better on held-out users and stops
one fitted to noise; every number it reports is recomputed here from the records, by hand."""

from __future__ import annotations

import gzip
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from tests.support import fleet_log

SEED = 20261202  # the bootstrap's fixed seed (memrank.evaluation.bootstrap.SEED), part of the gate's contract
SUPPORT = {"relevance": 0.3, "lexical": 0.2, "context": 0.1, "speaker_pair": 0.1, "importance": 0.02, "thread": 0.1,
           "length": 0.08, "hop": 0.05, "statement": 0.02, "date": 0.03}


def _tune(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memrank.cli", "tune", "--no-progress", *args],
                          capture_output=True, text=True, timeout=300)


def held_out_users(users: int, fraction: float, seed: int) -> set[str]:
    """The gate's split, by its definition: sorted user names, shuffled by the seed, the first round(f x n)."""
    names = sorted(f"user-{u}" for u in range(users))
    order = np.random.default_rng(seed).permutation(len(names)).tolist()
    return {names[i] for i in order[:max(1, round(fraction * len(names)))]}


def recall_at_5(decision: dict[str, Any], relevant: set[str], weights: dict[str, float]) -> float:
    """Candidates by sum(w x normalised), ties in candidate order; relevant ones in the top 5 over all relevant."""
    c = decision["candidates"]
    score = [sum(weights[s] * c["signals"][s]["normalized"][i] for s in weights) for i in range(c["count"])]
    order = sorted(range(c["count"]), key=lambda i: (-score[i], i))
    return len({c["id"][i] for i in order[:5]} & relevant) / len(relevant)


def percentile(sorted_values: list[float], q: float) -> float:
    """The q-th percentile with linear interpolation between closest ranks (numpy's default)."""
    pos = q / 100 * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def slow_paired_bootstrap(d: list[float], resamples: int = 2000) -> tuple[float, float, float]:
    """mean(d), and the 2.5th / 97.5th percentiles of the means of resamples with replacement, one by one."""
    rng = np.random.default_rng(SEED)
    means = []
    for _ in range(resamples):
        draw = rng.integers(0, len(d), len(d)).tolist()
        means.append(sum(d[i] for i in draw) / len(d))
    means.sort()
    return sum(d) / len(d), percentile(means, 2.5), percentile(means, 97.5)


def expected(recs: list[dict[str, Any]], users: int, seed: int, serving: dict[str, float],
             tuned: dict[str, float]) -> dict[str, Any]:
    """The gate's numbers from the records: the held-out users' recall@5 under both weightings, paired."""
    held = held_out_users(users, 0.3, seed)
    labels = {r["decision_id"]: {x["candidate_id"] for x in r["labels"]} for r in recs if "labels" in r}
    pairs = [(recall_at_5(d, labels[d["decision_id"]], tuned), recall_at_5(d, labels[d["decision_id"]], serving))
             for d in recs if "candidates" in d and d["request_id"].split("/")[0] in held]
    delta, low, high = slow_paired_bootstrap([a - b for a, b in pairs])
    return {"queries": len(pairs), "groups": len(held), "tuned": sum(a for a, _ in pairs) / len(pairs),
            "serving": sum(b for _, b in pairs) / len(pairs), "delta": delta, "low": low, "high": high}


def _three(x: float, sign: bool = False) -> str:
    text = f"{x:+.3f}" if sign else f"{x:.3f}"
    return text.replace("0.", ".", 1) if abs(x) < 1 else text


@pytest.fixture(scope="module")
def support_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cfg") / "serving.yaml"
    signals = [{"name": n, "weight": SUPPORT[n], "normalization": norm} for n, norm in fleet_log.SIGNALS]
    # as the pods serve it: the hashed decision log's key file comes from their environment, not this file
    path.write_text(yaml.safe_dump({"decision_log": {"enabled": True, "content": "hash", "sink": "stdout"},
                                    "profiles": {"support": {"base": "default", "signals": signals}}}))
    return path


def test_a_profile_better_on_held_out_users_passes(tmp_path: Path, support_config: Path) -> None:
    recs = fleet_log.records(1, users=40, turns=5, truth="importance", profile="support", weights=SUPPORT)
    log = fleet_log.write(tmp_path / "decisions.jsonl", recs)
    out, report = tmp_path / "tuned.yaml", tmp_path / "gate.json"
    # no --base: the serving profile is the one the logged decisions name, from the pods' --config
    proc = _tune("--log", str(log), "--config", str(support_config), "--out", str(out), "--report", str(report),
                 "--require-better", "--seed", "7")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(report.read_text())
    tuned = doc["weights"]["tuned"]
    want = expected(recs, 40, 7, SUPPORT, tuned)
    assert doc["serving_profile"] == "support" and doc["weights"]["serving"] == SUPPORT
    assert doc["split"] == {"holdout": 0.3, "seed": 7, "train_queries": 140, "train_groups": 28,
                            "held_out_queries": want["queries"], "held_out_groups": want["groups"]}
    assert (want["queries"], want["groups"]) == (60, 12)
    got = doc["held_out"]
    for key in ("serving", "tuned", "delta"):
        assert got[key] == pytest.approx(want[key], abs=1e-12)
    assert got["ci95"] == pytest.approx([want["low"], want["high"]], abs=1e-12)
    assert want["low"] > 0 and doc["passed"] and doc["written"] == str(out)
    assert tuned["importance"] > SUPPORT["importance"]  # it learnt the signal relevance follows
    written = yaml.safe_load(out.read_text())["profiles"]["tuned"]
    assert {s["name"]: s["weight"] for s in written["signals"]} == tuned  # the gated weights are the ones written
    line = (f"memrank tune: gate: tuned recall@5 {_three(want['tuned'])} vs serving {_three(want['serving'])}, "
            f"{_three(want['delta'], True)} [{_three(want['low'], True)}, {_three(want['high'], True)}] over 60 "
            f"held-out queries from 12 groups: interval above 0: passed")
    assert line in proc.stdout.splitlines()
    assert "12 groups held out (--holdout 0.3, seed 7); fitting on the other 140" in proc.stdout


def test_a_profile_fitted_to_noise_is_not_written(tmp_path: Path) -> None:
    recs = fleet_log.records(2, users=30, turns=5, truth="noise")
    log = fleet_log.write(tmp_path / "decisions.jsonl", recs)
    out, report = tmp_path / "tuned.yaml", tmp_path / "gate.json"
    out.write_text("# the profile in force\n")
    proc = _tune("--log", str(log), "--out", str(out), "--report", str(report), "--require-better")
    assert proc.returncode == 3, proc.stderr
    assert out.read_text() == "# the profile in force\n"  # not replaced
    doc = json.loads(report.read_text())
    default = {n: w for n, w in doc["weights"]["serving"].items()}
    want = expected(recs, 30, 0, default, doc["weights"]["tuned"])
    assert doc["serving_profile"] == "default" and not doc["passed"] and doc["written"] is None
    assert doc["held_out"]["ci95"] == pytest.approx([want["low"], want["high"]], abs=1e-12)
    assert want["low"] <= 0
    assert proc.stderr.strip().splitlines()[-1] == (
        f"memrank tune: gate: tuned recall@5 {_three(want['tuned'])} vs serving {_three(want['serving'])}, "
        f"{_three(want['delta'], True)} [{_three(want['low'], True)}, {_three(want['high'], True)}] over "
        f"{want['queries']} held-out queries from {want['groups']} groups: interval not above 0; profile not written")


def test_without_require_better_a_failed_gate_still_writes(tmp_path: Path) -> None:
    log = fleet_log.write(tmp_path / "d.jsonl", fleet_log.records(2, users=30, turns=5, truth="noise"))
    out = tmp_path / "tuned.yaml"
    proc = _tune("--log", str(log), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "interval not above 0" in proc.stdout and out.is_file()


@pytest.mark.parametrize(("args", "message"), [
    (["--holdout", "1.5"], "--holdout 1.5: expected a fraction in (0, 1), or 0 for no gate"),
    (["--holdout", "0", "--require-better"], "--require-better and --report need the gate: --holdout FRACTION"),
    (["--base", "nope"], "unknown base profile 'nope'"),
])
def test_bad_gate_flags_name_the_flag(tmp_path: Path, args: list[str], message: str) -> None:
    log = fleet_log.write(tmp_path / "d.jsonl", fleet_log.records(3, users=4, turns=2, truth="noise"))
    proc = _tune("--log", str(log), "--out", str(tmp_path / "o.yaml"), *args)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr


def test_a_single_group_cannot_be_held_out(tmp_path: Path) -> None:
    log = fleet_log.write(tmp_path / "d.jsonl", fleet_log.records(3, users=1, turns=6, truth="importance"))
    proc = _tune("--log", str(log), "--out", str(tmp_path / "o.yaml"))
    assert proc.returncode == 2
    assert "--holdout: 1 query group(s); holding out whole groups needs at least 2" in proc.stderr


def test_the_serving_profile_is_read_from_the_first_local_log(tmp_path: Path) -> None:
    from memrank.tuning.gate_cli import logged_profile

    recs = fleet_log.records(4, users=1, turns=1, truth="noise", profile="support", weights=SUPPORT)
    feedback_only = fleet_log.write(tmp_path / "feedback.jsonl", [recs[1]])
    plain = fleet_log.write(tmp_path / "d.jsonl", recs)
    packed = tmp_path / "d.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert logged_profile([plain]) == logged_profile([str(packed)]) == "support"
    assert logged_profile([feedback_only, plain]) == "support"  # the first decision record, file after file
    assert logged_profile([tmp_path]) is None and logged_profile(["s3://bucket/prefix/"]) is None
    assert logged_profile(None) is None
