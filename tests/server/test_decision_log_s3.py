"""Sink s3 against a real S3 server (tests/support/s3server.py) and live memrank servers: records land in
gzipped JSON-lines objects partitioned by the hour of their time, the same records the file sink writes; with
the S3 server down every record is counted (written or dropped by reason) and calls are still answered; uploads
retried while it is down land once it is back; SIGTERM uploads what is held."""

from __future__ import annotations

import gzip
import json
import random
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from google.protobuf.timestamp_pb2 import Timestamp
from prometheus_client import CollectorRegistry

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.client import RankingClient
from memrank.config import DecisionLogSettings, load_settings
from memrank.core.errors import ConfigError
from memrank.grpc.server import create_server
from tests.server.test_decision_log import request, schema
from tests.support.s3server import S3Server
from tests.support.servers import loopback_settings, start_serve, stop

# <prefix>/dt=YYYY-MM-DD/hour=HH/<host>-<pid>-<YYYYmmddTHHMMSSmmm>Z-<n>.jsonl.gz
KEY = re.compile(r"(?P<prefix>.+)/dt=(?P<dt>\d{4}-\d\d-\d\d)/hour=(?P<hour>\d\d)/"
                 r"[A-Za-z0-9._]+-\d+-\d{8}T\d{9}Z-\d{6}\.jsonl\.gz")
LOST = ("lost_after_ack", "write_error", "upload_failed", "buffer_full")


def objects(s3: S3Server, prefix: str) -> dict[str, list[dict[str, Any]]]:
    """Each object under ``prefix``: its records, read back by gunzipping and parsing its lines."""
    return {key: [json.loads(line) for line in gzip.decompress(s3.get(key)).splitlines()]
            for key in s3.keys(prefix + "/")}


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.1)


def records_in(s3: S3Server, prefix: str, n: int, timeout: float = 20) -> dict[str, list[dict[str, Any]]]:
    """The objects under ``prefix`` once they hold ``n`` records."""
    wait_for(lambda: sum(map(len, objects(s3, prefix).values())) >= n, timeout, f"{n} records under {prefix}")
    return objects(s3, prefix)


def config(tmp_path: Path, name: str, **log: Any) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"server": {"address": "127.0.0.1:0", "metrics_port": 0},
                                    "decision_log": {"enabled": True, **log}}))
    return path


def calls(port: int, rng: random.Random, tag: str, n: int) -> list[pb.RankResponse]:
    """``n`` logged Rank calls at a fixed reference time, each labelled by a RecordFeedback call."""
    at = Timestamp(seconds=1_765_000_000)
    out = []
    with RankingClient(f"127.0.0.1:{port}", retries=0) as c:
        for i in range(n):
            resp = c.rank(request(rng, f"{tag}-{i}", reference_time=at, log_decision=True))
            assert resp.decision_logged
            c.record_feedback(resp, {f"{tag}-{i}-m1": 2, f"{tag}-{i}-m4": 0}, labeler="gold")
            out.append(resp)
    return out


def hour_of(rfc3339: str) -> tuple[str, str]:
    """(YYYY-MM-DD, HH) of a record's server_time, read by datetime, not by the sink's code."""
    when = datetime.fromisoformat(rfc3339.replace("Z", "+00:00"))
    return f"{when.year:04d}-{when.month:02d}-{when.day:02d}", f"{when.hour:02d}"


def comparable(record: dict[str, Any]) -> dict[str, Any]:
    """A record without what differs between two servers given the same calls: when it was logged, and the ids
    the server draws (a feedback id; a decision's id, its receipt digest, covers the server's time)."""
    return {k: v for k, v in record.items() if k not in ("server_time", "feedback_id", "decision_id")}


def test_records_land_by_hour_as_the_file_sink_writes_them(tmp_path: Path, s3_server: S3Server) -> None:
    file_log = tmp_path / "decisions.jsonl"
    to_file = start_serve(tmp_path, "--config", str(config(tmp_path, "file", sink="file", path=str(file_log))))
    try:
        file_answers = calls(to_file.port, random.Random(7), "call", 3)
    finally:
        assert stop(to_file) == 0
    s3 = config(tmp_path, "s3", sink="s3", s3_url=f"s3://{s3_server.bucket}/by-hour/", s3_batch_seconds=0.5,
                s3_endpoint=s3_server.endpoint)
    to_s3 = start_serve(tmp_path, "--config", str(s3), env=s3_server.env())
    try:
        answers = calls(to_s3.port, random.Random(7), "call", 3)
        found = records_in(s3_server, "by-hour", 6)
    finally:
        assert stop(to_s3) == 0
    logged = []
    for key, recs in sorted(found.items()):
        match = KEY.fullmatch(key)
        assert match is not None and match["prefix"] == "by-hour", key
        assert {hour_of(r["server_time"]) for r in recs} == {(match["dt"], match["hour"])}, key
        logged += recs
    logged.sort(key=lambda r: (r["request_id"], r["schema"]))
    for r in logged:
        schema(r["schema"]).validate(r)
    assert [r["decision_id"] for r in logged] == [a.receipt.digest for a in answers for _ in range(2)]
    in_file = sorted((json.loads(line) for line in file_log.read_text().splitlines()),
                     key=lambda r: (r["request_id"], r["schema"]))
    assert [r["decision_id"] for r in in_file] == [a.receipt.digest for a in file_answers for _ in range(2)]
    assert [comparable(r) for r in logged] == [comparable(r) for r in in_file]


def test_sigterm_uploads_what_is_held(tmp_path: Path, s3_server: S3Server) -> None:
    """Objects not yet due (an hour's batch) are sealed and uploaded in the shutdown, before the exit."""
    s3 = config(tmp_path, "s3", sink="s3", s3_url=f"s3://{s3_server.bucket}/at-exit", s3_batch_seconds=3600,
                s3_endpoint=s3_server.endpoint)
    proc = start_serve(tmp_path, "--config", str(s3), env=s3_server.env())
    try:
        answers = calls(proc.port, random.Random(3), "term", 2)
        time.sleep(0.5)
        assert s3_server.keys("at-exit/") == []
    finally:
        assert stop(proc) == 0
    logged = [r for recs in objects(s3_server, "at-exit").values() for r in recs]
    assert sorted((r["schema"], r["request_id"]) for r in logged) == [
        ("memrank.decision.v1", "term-0"), ("memrank.decision.v1", "term-1"),
        ("memrank.feedback.v1", "term-0"), ("memrank.feedback.v1", "term-1")]
    assert {r["decision_id"] for r in logged} == {a.receipt.digest for a in answers}


# ---------------------------------------------------------------- an S3 server that goes away


@pytest.fixture
def own_s3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Server]:
    """An S3 server of this test's own (it is stopped and started), its credentials in the environment the
    writer process inherits."""
    server = S3Server.launch(tmp_path / "s3")
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    yield server
    server.close()


def counted(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def in_process(s3: S3Server, registry: CollectorRegistry, prefix: str, **log: Any) -> Any:
    settings = loopback_settings()
    d = DecisionLogSettings(enabled=True, sink="s3", s3_url=f"s3://{s3.bucket}/{prefix}/", s3_endpoint=s3.endpoint,
                            s3_batch_seconds=0.2, **log)
    return create_server(replace(settings, decision_log=d), registry)


def test_s3_down_drops_are_counted_and_calls_still_answered(own_s3: S3Server) -> None:
    registry = CollectorRegistry()
    running = in_process(own_s3, registry, "down", s3_retries=1)
    try:
        own_s3.stop()
        calls(running.port, random.Random(5), "down", 4)  # each answered decision_logged=true
        wait_for(lambda: counted(registry, "memrank_decision_log_dropped_total", reason="upload_failed") == 8, 20,
                 "8 records (4 decisions, 4 feedback) dropped as upload_failed")
        failures = counted(registry, "memrank_decision_log_write_failures_total", error="EndpointConnectionError")
        assert failures >= 2  # each object: its first attempt and its one retry
        calls(running.port, random.Random(6), "still", 1)
    finally:
        running.stop(5)
    assert counted(registry, "memrank_decision_log_records_total", kind="decision") == 0
    assert sum(counted(registry, "memrank_decision_log_dropped_total", reason=r) for r in LOST) == 10


def test_uploads_retried_while_s3_is_down_land_when_it_is_back(own_s3: S3Server) -> None:
    registry = CollectorRegistry()
    running = in_process(own_s3, registry, "back", s3_retries=20)
    try:
        own_s3.stop()
        answers = calls(running.port, random.Random(8), "back", 3)
        wait_for(lambda: counted(registry, "memrank_decision_log_write_failures_total",
                                 error="EndpointConnectionError") >= 2, 20, "two failed uploads")
        own_s3.start()
        wait_for(lambda: counted(registry, "memrank_decision_log_records_total", kind="feedback") == 3, 40,
                 "3 feedback records written")
        assert counted(registry, "memrank_decision_log_records_total", kind="decision") == 3
    finally:
        running.stop(5)
    logged = [r for recs in objects(own_s3, "back").values() for r in recs]
    assert sorted(r["decision_id"] for r in logged) == sorted(a.receipt.digest for a in answers for _ in range(2))
    assert sum(counted(registry, "memrank_decision_log_dropped_total", reason=r) for r in LOST) == 0


def test_a_full_buffer_drops_and_every_record_is_accounted_for(own_s3: S3Server) -> None:
    """S3 down, the writer's buffer at its 64 KiB floor: what does not fit is dropped as buffer_full, what is
    held at shutdown (s3_close_seconds 1) as lost_after_ack; written + dropped = every record answered true."""
    registry = CollectorRegistry()
    running = in_process(own_s3, registry, "full", s3_retries=50, s3_buffer_bytes=1 << 16, s3_batch_bytes=1 << 12,
                         s3_close_seconds=1.0)
    own_s3.stop()
    try:
        n = 40
        calls(running.port, random.Random(9), "full", n)
        wait_for(lambda: counted(registry, "memrank_decision_log_dropped_total", reason="buffer_full") > 0, 20,
                 "records dropped as buffer_full")
    finally:
        running.stop(5)
    dropped = {r: counted(registry, "memrank_decision_log_dropped_total", reason=r) for r in LOST}
    written = sum(counted(registry, "memrank_decision_log_records_total", kind=k) for k in ("decision", "feedback"))
    assert written == 0 and dropped["lost_after_ack"] > 0
    assert written + sum(dropped.values()) == 2 * n


def test_records_held_when_the_shutdown_time_runs_out_are_lost_after_ack(own_s3: S3Server) -> None:
    """S3 down, retries left and room in the buffer: at shutdown each record still held is counted
    lost_after_ack once s3_close_seconds (1 s) runs out, none upload_failed, and the writer ends in time."""
    registry = CollectorRegistry()
    running = in_process(own_s3, registry, "held", s3_retries=50, s3_close_seconds=1.0)
    own_s3.stop()
    try:
        calls(running.port, random.Random(4), "held", 3)
        wait_for(lambda: counted(registry, "memrank_decision_log_write_failures_total",
                                 error="EndpointConnectionError") >= 1, 20, "a failed upload")
    finally:
        started = time.monotonic()
        running.stop(0)
        took = time.monotonic() - started
    dropped = {r: counted(registry, "memrank_decision_log_dropped_total", reason=r) for r in LOST}
    assert dropped == {"lost_after_ack": 6, "write_error": 0, "upload_failed": 0, "buffer_full": 0}
    assert took < 1.0 + 5  # s3_close_seconds, and the writer's exit


# ---------------------------------------------------------------- configuration


@pytest.mark.parametrize(("env", "message"), [
    ({}, "decision_log.s3_url: required with decision_log.sink: s3"),
    ({"MEMRANK_DECISION_LOG_S3_URL": "https://bucket/logs"}, "decision_log.s3_url (set by "
     "MEMRANK_DECISION_LOG_S3_URL): must start with s3:// and name a bucket"),
    ({"MEMRANK_DECISION_LOG_S3_URL": "s3://b/logs"}, "must start with s3:// and name a bucket"),
    ({"MEMRANK_DECISION_LOG_S3_URL": "s3://logs", "MEMRANK_DECISION_LOG_S3_ENDPOINT": "minio:9000"},
     "decision_log.s3_endpoint (set by MEMRANK_DECISION_LOG_S3_ENDPOINT): expected an http:// or https:// URL"),
    ({"MEMRANK_DECISION_LOG_S3_URL": "s3://logs", "MEMRANK_DECISION_LOG_S3_BUFFER_BYTES": "65536",
      "MEMRANK_DECISION_LOG_S3_BATCH_BYTES": "1048576"},
     "decision_log.s3_buffer_bytes (set by MEMRANK_DECISION_LOG_S3_BUFFER_BYTES): 65536 is below "
     "decision_log.s3_batch_bytes (1048576)"),
])
def test_config_errors_name_the_key(env: dict[str, str], message: str) -> None:
    base = {"MEMRANK_DECISION_LOG_ENABLED": "true", "MEMRANK_DECISION_LOG_SINK": "s3"}
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_settings(env=base | env)


def test_without_boto3_the_start_is_refused_naming_the_extra() -> None:
    """A writer process cannot upload without boto3: the server says so at start, naming the extra."""
    code = ("import sys; sys.modules['boto3'] = None\n"
            "from memrank.config import DecisionLogSettings\n"
            "from memrank.decisions.log import DecisionLog\n"
            "DecisionLog(DecisionLogSettings(enabled=True, sink='s3', s3_url='s3://logs/x/'))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 1
    assert ("ConfigError: decision_log.sink: s3 needs boto3, which is not installed: pip install "
            "'memrank-sidecar[s3]'") in proc.stderr
