"""The bundled synthetic set (eval/synthetic): what make.py writes, and `memrank eval` on it with no network."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from memrank.evaluation.data import load_conversations

ROOT = Path(__file__).resolve().parents[2]
SYNTHETIC = ROOT / "eval" / "synthetic"
DATA, EMBEDDINGS = SYNTHETIC / "conversations.jsonl", SYNTHETIC / "embeddings.npz"
ROWS = ["bm25", "dense", "rrf", "minmax", "llamaindex", "llamaindex-dist", "langchain", "recent", "default",
        "generative-agents", "agent-observer", "lians-recall", "research"]
METRICS = ("recall@5", "recall@10", "anyhit@5", "ndcg@10", "budget_recall@512", "redundancy@5")


def _make() -> Any:
    spec = importlib.util.spec_from_file_location("synthetic_make", SYNTHETIC / "make.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_files_are_what_make_py_writes() -> None:
    assert _make().main(["--check"]) == 0, "run: python eval/synthetic/make.py"


def test_the_set_is_small_and_loads_with_its_embeddings() -> None:
    assert DATA.stat().st_size + EMBEDDINGS.stat().st_size < 300_000
    convs = load_conversations(DATA, EMBEDDINGS)
    assert len(convs) >= 5
    for c in convs:
        ids = {t.id for t in c.turns}
        assert c.turn_emb is not None and c.question_emb is not None
        assert c.turn_emb.shape == (len(c.turns), 64) and c.question_emb.shape == (len(c.questions), 64)
        assert {q.category for q in c.questions} <= {1, 2, 3, 4, 5}
        for q in c.questions:
            assert q.evidence and set(q.evidence) <= ids, q.key


def test_make_py_is_deterministic(tmp_path: Path) -> None:
    make = _make()
    assert make.main(["--out", str(tmp_path)]) == 0
    for name in ("conversations.jsonl", "embeddings.npz"):
        assert (tmp_path / name).read_bytes() == (SYNTHETIC / name).read_bytes(), name


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], float]:
    pytest.importorskip("bm25s", reason="the eval extra is not installed")
    out = tmp_path_factory.mktemp("synthetic") / "report.json"
    # No network: an unroutable proxy for anything that would try, and the Hugging Face hub told to stay offline.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "server"), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "memrank.cli", "eval", "--data", str(DATA), "--embeddings",
                           str(EMBEDDINGS), "--out", str(out), "--no-progress"],
                          capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    seconds = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    return proc, json.loads(out.read_text()), seconds


def test_eval_runs_on_the_bundled_set(run: tuple[subprocess.CompletedProcess[str], dict[str, Any], float]) -> None:
    proc, report, seconds = run
    assert seconds < 60, f"memrank eval took {seconds:.1f} s on the bundled set"  # about 10 s on 2 idle cores
    questions = sum(1 for c in load_conversations(DATA) for q in c.questions if q.category in (1, 2, 3, 4))
    assert report["questions"] == questions
    assert report["notes"] == []  # embeddings given: nothing fell back to BM25-only
    rows = {r["profile"]: r for r in report["rows"]}
    assert list(rows) == ROWS
    for name, r in rows.items():
        for m in METRICS:
            assert 0.0 <= r[m] <= 1.0, (name, m)
        assert r["recall@5"] <= r["recall@10"], name
    # The table on stdout has every row; no internal verdicts in the user's output.
    for name in ROWS:
        assert f"| {name} |" in proc.stdout
    assert "target" not in proc.stdout.lower() and "NOT met" not in proc.stdout


def test_the_metrics_are_sane(run: tuple[subprocess.CompletedProcess[str], dict[str, Any], float]) -> None:
    """Both retrievers carry signal, fusion is not worse than either alone, newest-first is near zero."""
    _, report, _ = run
    rows = {r["profile"]: r for r in report["rows"]}
    assert rows["bm25"]["recall@5"] > 0.3 and rows["dense"]["recall@5"] > 0.3
    assert rows["llamaindex"]["recall@5"] >= max(rows["bm25"]["recall@5"], rows["dense"]["recall@5"]) - 0.02
    assert rows["recent"]["recall@5"] < 0.1
    assert rows["default"]["recall@5"] > rows["recent"]["recall@5"]
    assert rows["default"]["redundancy@5"] <= rows["llamaindex"]["redundancy@5"]
    assert report["pool"]["recall"] > 0.9
