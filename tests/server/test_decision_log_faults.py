"""The decision log under faults (issue 32, items 1-5): nothing it was handed is lost without being counted.
Live servers on loopback, real files, real writer processes."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.client import RankingClient
from memrank.config import DecisionLogSettings, Settings
from memrank.grpc.server import create_server
from tests.support.servers import loopback_settings


def logging_settings(path: Path, **log: Any) -> Settings:
    s = loopback_settings()
    return replace(s, decision_log=DecisionLogSettings(enabled=True, sink="file", path=str(path), **log))


def wait_for_lines(path: Path, n: int, timeout: float = 5.0) -> list[dict[str, Any]]:
    """The file's records once it holds ``n`` (AssertionError naming what it holds after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        lines = path.read_text().splitlines() if path.exists() else []
        if len(lines) >= n or time.monotonic() > deadline:
            assert len(lines) >= n, f"{len(lines)} of {n} records written after {timeout} s"
            return [json.loads(line) for line in lines]
        time.sleep(0.05)


def small_request(request_id: str) -> pb.RankRequest:
    return pb.RankRequest(request_id=request_id, query="tea", log_decision=True,
                          candidates=[pb.Candidate(id="m1", content="tea", retrieval_score=0.9)])


def test_small_records_are_written_while_the_server_runs_not_at_shutdown(tmp_path: Path) -> None:
    path = tmp_path / "decisions.jsonl"
    running = create_server(logging_settings(path))
    try:
        with RankingClient(f"127.0.0.1:{running.port}", retries=0) as c:
            resp = c.rank(small_request("s/1"))
            assert resp.decision_logged
            assert [r["schema"] for r in wait_for_lines(path, 1)] == ["memrank.decision.v1"]
            c.record_feedback(resp, {"m1": 2})
            assert [r["schema"] for r in wait_for_lines(path, 2)][1] == "memrank.feedback.v1"
    finally:
        running.stop(5)
