"""bench.fleet_logs writes records the schemas accept, of a live server's size, that `tune --log` reads whole."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from bench.fleet_logs import write_file
from memrank.config import load_settings
from memrank.tuning import fleet
from memrank.tuning.queries import base_profile

jsonschema = pytest.importorskip("jsonschema")
pytest.importorskip("duckdb", reason="the fleet extra is not installed")
SCHEMAS = Path(__file__).resolve().parents[2] / "server" / "memrank" / "decisions" / "schema"


def test_records_are_valid_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "dt=2026-12-06" / "hour=00" / "pod-0-0000.jsonl.gz"
    n, size = write_file(path, seed=3, first_id=0, size=400_000)
    schemas = {name: json.loads((SCHEMAS / f"{name}.json").read_text())
               for name in ("memrank.decision.v1", "memrank.feedback.v1")}
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    records = [json.loads(line) for line in lines]
    for r in records:
        jsonschema.validate(r, schemas[r["schema"]])
    decisions = {r["decision_id"] for r in records if r["schema"] == "memrank.decision.v1"}
    feedback = [r for r in records if r["schema"] == "memrank.feedback.v1"]
    labelled = {r["decision_id"] for r in feedback}
    assert len(decisions) == n and size == path.stat().st_size
    per_candidate = [len(line) / r["candidates"]["count"] for line, r in zip(lines, records, strict=True)
                     if r["schema"] == "memrank.decision.v1"]
    assert min(per_candidate) > 550 and max(per_candidate) < 750  # a live server's records: ~650 B a candidate
    _, stats, report = fleet.load([str(tmp_path)], base_profile(load_settings(env={}).profiles, "default"))
    assert (stats.decisions, stats.labelled, stats.feedback) == (n, len(labelled), len(feedback))
    assert report.duplicate_decisions == sum(r["schema"] == "memrank.decision.v1" for r in records) - n
