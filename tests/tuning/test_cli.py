"""`memrank tune` end to end as a subprocess; the file it writes loads in `memrank serve` and `memrank eval`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from google.protobuf import json_format

from memrank.config import SettingsSource, load_settings
from memrank.profiles.builtin import BUILTIN_PROFILES
from memrank.tuning.labels import query_of_line
from tests.support import locomo_fixture
from tests.tuning import synthetic

TRUE = np.array([0.2, 0.7, 0.0, 0.0, 0.0, 0.1])


def _memrank(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memrank.cli", *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    folder = tmp_path_factory.mktemp("tune")
    labels = folder / "labels.jsonl"
    labels.write_text("".join(synthetic.labels_line(s) + "\n" for s in synthetic.queries(1, 60, TRUE)),
                      encoding="utf-8")
    out = folder / "tuned.yaml"
    proc = _memrank("tune", "--labels", str(labels), "--base", "default", "--name", "mine", "--out", str(out),
                    "--folds", "3", "--seed", "4")
    assert proc.returncode == 0, proc.stderr
    return out, proc


def _default_weight(signal: str) -> float:
    return next(s.weight for s in BUILTIN_PROFILES["default"].signals if s.name == signal)


def test_prints_the_folds_and_the_weights(tuned: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    _, proc = tuned
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("memrank tune: 60 queries in 10 groups from ")
    assert "base default, model ascent, metric recall@5, 3 folds by group, seed 4" in lines[0]
    assert lines[1].startswith("| fold | test groups | train queries | test queries | base train recall@5 |")
    assert [line.split("|")[1].strip() for line in lines[3:7]] == ["1", "2", "3", "out of fold"]
    assert any(line.startswith("out of fold recall@5: base ") for line in lines)
    assert "| signal | normalization | default | mine |" in lines
    assert f"| relevance | min_max | {_default_weight('relevance'):g} |" in proc.stdout
    assert lines[-1].startswith("wrote ") and "profile 'mine' (base default)" in lines[-1]
    assert "memrank tune: scoring" in proc.stderr and "memrank tune: fitting" in proc.stderr  # the progress bars


def test_the_file_loads_through_settings_source(tuned: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    out, proc = tuned
    doc = yaml.safe_load(out.read_text())
    body = doc["profiles"]["mine"]
    assert body["base"] == "default" and [s["name"] for s in body["signals"]] == [
        s.name for s in BUILTIN_PROFILES["default"].signals]
    profile = SettingsSource(str(out)).load().profiles["mine"]
    weights = [s.weight for s in profile.signals]
    assert sum(weights) == pytest.approx(1.0, abs=1e-9) and min(weights) >= 0
    assert [s.normalization for s in profile.signals] == [s.normalization for s in BUILTIN_PROFILES["default"].signals]
    assert profile.diversity_lambda == BUILTIN_PROFILES["default"].diversity_lambda  # only the weights change
    for s in profile.signals:  # the table printed the weights written
        assert f"| {s.name} | {s.normalization} | {_default_weight(s.name):g} | {s.weight:g} |" \
            in proc.stdout


def test_serve_and_rank_load_it(tuned: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    out, _ = tuned
    proc = _memrank("serve", "--config", str(out), "--print-config")
    assert proc.returncode == 0, proc.stderr
    assert "mine" in yaml.safe_load(proc.stdout)["profiles"]
    req = synthetic.queries(9, 1, TRUE)[0].request
    req.profile = "mine"
    path = tmp_path / "req.json"
    path.write_text(json_format.MessageToJson(req))
    proc = _memrank("rank", "--config", str(out), str(path))
    assert proc.returncode == 0, proc.stderr
    response = json.loads(proc.stdout)
    written = {s["name"]: s["weight"] for s in yaml.safe_load(out.read_text())["profiles"]["mine"]["signals"]}
    assert response["profile"] == "mine" and response["selected"]
    assert {w["signal"]: w.get("weight", 0.0) for w in response["weights"]} == pytest.approx(written)


def test_same_seed_same_file(tuned: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    out, _ = tuned
    again = tmp_path / "again.yaml"
    labels = out.parent / "labels.jsonl"
    proc = _memrank("tune", "--labels", str(labels), "--name", "mine", "--out", str(again), "--folds", "3",
                    "--seed", "4", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    body = lambda p: [x for x in p.read_text().splitlines() if not x.startswith("#")]  # noqa: E731
    assert body(again) == body(out)
    assert proc.stderr == ""  # --no-progress: nothing on stderr


def test_locomo_data_to_memrank_eval(tmp_path: Path) -> None:
    pytest.importorskip("bm25s", reason="the eval extra is not installed")
    data, npz = locomo_fixture.write(tmp_path)
    out = tmp_path / "tuned.yaml"
    proc = _memrank("tune", "--data", str(data), "--embeddings", str(npz), "--out", str(out), "--folds", "2",
                    "--no-progress")
    assert proc.returncode == 0, proc.stderr
    assert "20 queries in 4 groups" in proc.stdout
    proc = _memrank("eval", "--data", str(data), "--embeddings", str(npz), "--config", str(out), "--profiles",
                    "tuned,default", "--baselines", "llamaindex", "--out", str(tmp_path / "report.json"),
                    "--no-progress")
    assert proc.returncode == 0, proc.stderr
    rows = {r["profile"] for r in json.loads((tmp_path / "report.json").read_text())["rows"]}
    assert rows == {"llamaindex", "tuned", "default"}


def test_the_example_labelled_line_is_valid() -> None:
    """examples/labelled.jsonl, the line the tuning guide shows (included from the file)."""
    example = Path(__file__).resolve().parents[2] / "examples" / "labelled.jsonl"
    (line,) = example.read_text(encoding="utf-8").splitlines()
    settings = load_settings(env={})
    q = query_of_line("examples/labelled.jsonl", line, settings.profiles["default"], settings.limits, 0.0)
    assert q.grades.tolist() == [2.0, 0.0] and q.group == "user-17"
