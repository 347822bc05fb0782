"""The Python client's record_feedback against a live server with the decision log on: the server at MEMRANK_ADDR
when clients/test.sh sets it (which then finds this feedback, labeler "python", joined to its decision), else an
in-process one."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import grpc
import pytest

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.client import RankingClient, RankingError
from memrank.config import DecisionLogSettings
from memrank.grpc.server import create_server
from tests.support.servers import loopback_settings


@pytest.fixture(scope="module")
def address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if os.environ.get("MEMRANK_ADDR"):
        yield os.environ["MEMRANK_ADDR"]
        return
    path = Path(tmp_path_factory.mktemp("feedback")) / "decisions.jsonl"
    s = loopback_settings()
    running = create_server(replace(s, decision_log=DecisionLogSettings(enabled=True, sink="file", path=str(path))))
    yield f"127.0.0.1:{running.port}"
    running.stop(5)


def test_record_feedback_labels_a_logged_decision(address: str) -> None:
    with RankingClient(address, retries=0) as c:
        resp = c.rank(pb.RankRequest(request_id="python-feedback", query="where does alex live", log_decision=True,
                                     candidates=[pb.Candidate(id="m1", content="Alex lives in Berlin.",
                                                              retrieval_score=0.9),
                                                 pb.Candidate(id="m2", content="Alex likes tea.",
                                                              retrieval_score=0.4)]))
        assert resp.decision_logged, "is the server's decision log on?"
        fb = c.record_feedback(resp, {"m2": 0, "m1": 3}, labeler="python")
        assert len(fb.feedback_id) == 64 and fb.label_count == 2
        by_digest = c.record_feedback(resp.receipt.digest, {"m1": 3}, labeler="python")
        assert by_digest.feedback_id != fb.feedback_id  # other content (no request id, one label): another id
        with pytest.raises(RankingError) as err:
            c.record_feedback(resp, {"m1": 9})
        assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT and "labels[0].relevance" in err.value.fields
