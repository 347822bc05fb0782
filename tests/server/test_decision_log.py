"""The decision log against live servers: records valid under the published schemas and faithful to the answer,
masking, deterministic sampling, feedback, rotation, and no lost record on shutdown or interleaved line."""

from __future__ import annotations

import hashlib
import hmac
import json
import random
import signal
import string
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import jsonschema
import pytest
from prometheus_client import CollectorRegistry

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.client import RankingClient, RankingError
from memrank.config import DecisionLogSettings, Settings
from memrank.core.errors import ConfigError
from memrank.grpc.server import create_server
from tests.support.servers import free_port, loopback_settings, start_serve, stop

SCHEMAS = Path(__file__).resolve().parents[2] / "server" / "memrank" / "decisions" / "schema"


def schema(name: str) -> jsonschema.Draft202012Validator:
    doc = json.loads((SCHEMAS / f"{name}.json").read_text())
    jsonschema.Draft202012Validator.check_schema(doc)
    return jsonschema.Draft202012Validator(doc)


def logging_settings(path: Path, **log: Any) -> Settings:
    s = loopback_settings()
    return replace(s, decision_log=DecisionLogSettings(enabled=True, sink="file", path=str(path), **log))


def words(rng: random.Random, n: int) -> str:
    """Text of random 9-letter words: any 8-character window of it is practically unique to it."""
    return " ".join("".join(rng.choice(string.ascii_lowercase) for _ in range(9)) for _ in range(n))


def request(rng: random.Random, request_id: str, n: int = 12, **extra: Any) -> pb.RankRequest:
    topic = words(rng, 2)
    cands = []
    for i in range(n):
        emb = [1.0, 0.0, 0.0] if i % 3 == 0 else [0.0, 1.0, float(i)]  # near-duplicates for the covering pass
        cands.append(pb.Candidate(id=f"{request_id}-m{i}", content=f"{topic} {words(rng, 6)}", layer="session",
                                  kind="fact", source=pb.SOURCE_CHAT, retrieval_score=0.05 + 0.9 * i / n,
                                  embedding=emb))
    req = pb.RankRequest(request_id=request_id, query=f"{topic} {words(rng, 3)}", candidates=cands,
                         budget=pb.Budget(max_items=4), **extra)
    return req


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_records_follow_the_schemas_and_the_answer(tmp_path: Path) -> None:
    path = tmp_path / "decisions.jsonl"
    running = create_server(logging_settings(path))
    rng = random.Random(1)
    try:
        with RankingClient(f"127.0.0.1:{running.port}") as c:
            req = request(rng, "call-1", explain=pb.EXPLAIN_LEVEL_FULL, shadow_profile="research")
            resp = c.rank(req)
            fb = c.record_feedback(resp, {"call-1-m3": 3, "call-1-m5": 0}, labeler="gold")
    finally:
        running.stop(5)
    decision, feedback = records(path)
    schema("memrank.decision.v1").validate(decision)
    schema("memrank.feedback.v1").validate(feedback)
    assert resp.decision_logged
    assert decision["decision_id"] == resp.receipt.digest and decision["request_id"] == "call-1"
    assert decision["profile"] == resp.profile and decision["policy_version"] == resp.policy_version
    assert [(w["signal"], w["weight"]) for w in decision["weights"]] == [(w.signal, w.weight) for w in resp.weights]
    assert decision["shadow"]["profile"] == "research"
    assert decision["shadow"]["selected_ids"] == list(resp.shadow.selected_ids)
    assert decision["query"] == {"length": len(req.query), "tokens": (len(req.query) + 3) // 4}
    cands = decision["candidates"]
    assert cands["count"] == 12 and cands["id"] == [x.id for x in req.candidates]
    assert cands["content_length"] == [len(x.content) for x in req.candidates]
    assert cands["source"] == ["chat"] * 12
    # Every candidate's outcome is what the answer said: selected with its rank and position, else its reason.
    index = {cid: i for i, cid in enumerate(cands["id"])}
    for m in resp.selected:
        i = index[m.id]
        assert (cands["outcome"][i], cands["rank"][i], cands["position"][i]) == ("selected", m.rank, m.position)
        assert cands["final_score"][i] == m.breakdown.final_score
    for d in resp.dropped:
        i = index[d.id]
        assert cands["outcome"][i] == pb.DropReason.Name(d.reason).removeprefix("DROP_REASON_").lower()
        assert cands["rank"][i] is None and cands["position"][i] is None
        assert cands["covered_by"][i] == (d.breakdown.covered_by or None)
    assert any(cands["covered_by"]), "the near-duplicates were not covered: the test does not reach covered_by"
    # Every signal raw, normalised and contribution = weight x normalised, as the breakdowns give them.
    breakdowns = {m.id: m.breakdown for m in resp.selected} | {d.id: d.breakdown for d in resp.dropped}
    for cid, b in breakdowns.items():
        for s in b.signals:
            logged = cands["signals"][s.name]
            assert logged["raw"][index[cid]] == s.raw
            assert logged["normalized"][index[cid]] == s.normalized
            # the weight in effect for this request (s.weight: a constant signal's is shared by the others)
            assert logged["contribution"][index[cid]] == s.weight * s.normalized
    assert [a["layer"] for a in decision["allocations"]] == [a.layer for a in resp.allocations]
    assert feedback["decision_id"] == resp.receipt.digest and feedback["request_id"] == "call-1"
    assert feedback["labels"] == [{"candidate_id": "call-1-m3", "relevance": 3},
                                  {"candidate_id": "call-1-m5", "relevance": 0}]
    assert feedback["feedback_id"] == fb.feedback_id and fb.label_count == 2


def windows(text: str, width: int = 8) -> set[str]:
    return {text[i:i + width] for i in range(len(text) - width + 1)}


@pytest.mark.parametrize("content", ["omit", "hash"])
def test_no_content_or_query_text_reaches_the_log(tmp_path: Path, content: str) -> None:
    path, key = tmp_path / "decisions.jsonl", b"0123456789abcdef0123456789abcdef"
    (tmp_path / "key").write_bytes(key)
    extra = {"hash_key_file": str(tmp_path / "key")} if content == "hash" else {}
    running = create_server(logging_settings(path, content=content, **extra))
    rng = random.Random(2)
    sent = [request(rng, f"mask-{k}", n=20) for k in range(5)]
    try:
        with RankingClient(f"127.0.0.1:{running.port}") as c:
            for req in sent:
                c.rank(req)
    finally:
        running.stop(5)
    text = path.read_text()
    assert len(text.splitlines()) == 5
    secret = set().union(*(windows(req.query) | set().union(*(windows(x.content) for x in req.candidates))
                           for req in sent))
    assert not [w for w in secret if w in text]
    for req, rec in zip(sent, records(path), strict=True):
        cands = rec["candidates"]
        if content == "hash":
            assert rec["query"]["hmac"] == hmac.new(key, req.query.encode(), hashlib.sha256).hexdigest()
            assert cands["content_hmac"] == [hmac.new(key, x.content.encode(), hashlib.sha256).hexdigest()
                                             for x in req.candidates]
        else:
            assert "hmac" not in rec["query"] and "content_hmac" not in cands


def test_plain_content_is_logged_with_a_warning_at_start(tmp_path: Path) -> None:
    path = tmp_path / "decisions.jsonl"
    proc = start_serve(tmp_path, "--address", "127.0.0.1:0", "--metrics-port", "0",
                       env={"MEMRANK_DECISION_LOG_ENABLED": "true", "MEMRANK_DECISION_LOG_SINK": "file",
                            "MEMRANK_DECISION_LOG_PATH": str(path), "MEMRANK_DECISION_LOG_CONTENT": "plain"})
    try:
        with RankingClient(f"127.0.0.1:{proc.port}") as c:
            req = request(random.Random(3), "plain-1")
            c.rank(req)
    finally:
        assert stop(proc) == 0
    warnings = [x for x in proc.lines() if x.get("level") == "warning" and "plain" in str(x.get("msg"))]
    assert warnings, proc.log.read_text()
    rec = records(path)[0]
    assert rec["query"]["text"] == req.query
    assert rec["candidates"]["content"] == [x.content for x in req.candidates]


def expected_sampled(request_id: str, rate: float) -> bool:
    """README's rule, written out: first 8 bytes of SHA-256(request_id), big-endian, below rate x 2^64."""
    return int(hashlib.sha256(request_id.encode()).hexdigest()[:16], 16) < rate * 2 ** 64


def test_sampling_follows_the_request_id_hash_and_log_decision_forces(tmp_path: Path) -> None:
    path = tmp_path / "decisions.jsonl"
    registry = CollectorRegistry()
    running = create_server(logging_settings(path, sample_rate=0.3), registry)
    rng = random.Random(4)
    ids = [f"sample-{k}" for k in range(40)]
    unsampled = next(i for i in (f"forced-{k}" for k in range(100)) if not expected_sampled(i, 0.3))
    try:
        with RankingClient(f"127.0.0.1:{running.port}") as c:
            flags = {i: c.rank(request(rng, i, n=3)).decision_logged for i in ids}
            forced = c.rank(request(rng, unsampled, n=3, log_decision=True))
    finally:
        running.stop(5)
    want = {i for i in ids if expected_sampled(i, 0.3)}
    assert 0 < len(want) < len(ids)
    assert {i for i, logged in flags.items() if logged} == want
    logged = records(path)
    assert [r["request_id"] for r in logged] == [i for i in ids if i in want] + [unsampled]
    assert forced.decision_logged and logged[-1]["forced"] is True and not any(r["forced"] for r in logged[:-1])
    # every decision the rate left out is counted, apart from the losses (the forced one was not left out)
    assert registry.get_sample_value("memrank_decision_log_dropped_total",
                                     {"reason": "sampled_out"}) == len(ids) - len(want)


def test_feedback_errors_name_the_field_and_need_the_log_on(tmp_path: Path) -> None:
    off = create_server(loopback_settings())
    on = create_server(logging_settings(tmp_path / "d.jsonl"))
    try:
        with RankingClient(f"127.0.0.1:{off.port}", retries=0) as c:
            with pytest.raises(RankingError) as err:
                c.record_feedback("a" * 64, {"m1": 1})
            assert err.value.code == grpc.StatusCode.FAILED_PRECONDITION
            assert "decision_log.enabled" in str(err.value)
        with RankingClient(f"127.0.0.1:{on.port}", retries=0) as c:
            cases = [
                (pb.RecordFeedbackRequest(labels=[pb.FeedbackLabel(candidate_id="m", relevance=1)]), "decision_id"),
                (pb.RecordFeedbackRequest(decision_id="xyz", labels=[pb.FeedbackLabel(candidate_id="m")]),
                 "decision_id"),
                (pb.RecordFeedbackRequest(request_id="r"), "labels"),
                (pb.RecordFeedbackRequest(request_id="r", labels=[pb.FeedbackLabel(candidate_id="m", relevance=4)]),
                 "labels[0].relevance"),
                (pb.RecordFeedbackRequest(request_id="r", labels=[pb.FeedbackLabel(candidate_id="m"),
                                                                  pb.FeedbackLabel(candidate_id="m")]),
                 "labels[1].candidate_id"),
                (pb.RecordFeedbackRequest(request_id="r", labels=[pb.FeedbackLabel(relevance=2)]),
                 "labels[0].candidate_id"),
                (pb.RecordFeedbackRequest(request_id="r", labeler="x" * 129,
                                          labels=[pb.FeedbackLabel(candidate_id="m")]), "labeler"),
            ]
            for msg, field in cases:
                with pytest.raises(RankingError) as err:
                    c._call(c._stub.RecordFeedback, msg, None)
                assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
                assert field in err.value.fields, (field, err.value)
            first = c.record_feedback("b" * 64, {"m1": 2, "m2": 0})
            again = c.record_feedback("b" * 64, {"m2": 0, "m1": 2})
            assert first.feedback_id == again.feedback_id  # same feedback, same id (a reader drops duplicates)
    finally:
        off.stop(0)
        on.stop(5)


def test_config_refuses_hash_without_a_key_and_file_without_a_path() -> None:
    from memrank.config import load_settings

    with pytest.raises(ConfigError, match=r"decision_log\.hash_key_file"):
        load_settings(env={}, overrides={"decision_log.enabled": True, "decision_log.content": "hash"})
    with pytest.raises(ConfigError, match=r"decision_log\.path"):
        load_settings(env={}, overrides={"decision_log.enabled": True, "decision_log.sink": "file"})
    with pytest.raises(ConfigError, match=r"decision_log\.sample_rate"):
        load_settings(env={"MEMRANK_DECISION_LOG_SAMPLE_RATE": "1.5"})


def test_file_rotation_keeps_whole_records_and_the_configured_backups(tmp_path: Path) -> None:
    path = tmp_path / "decisions.jsonl"
    running = create_server(logging_settings(path, max_bytes=65536, backups=2))
    rng = random.Random(5)
    try:
        with RankingClient(f"127.0.0.1:{running.port}") as c:
            for k in range(40):
                c.rank(request(rng, f"rot-{k:02d}", n=60))
    finally:
        running.stop(5)
    files = [path, path.with_name(path.name + ".1"), path.with_name(path.name + ".2")]
    assert all(f.exists() for f in files) and not path.with_name(path.name + ".3").exists()
    kept = [r["request_id"] for f in reversed(files) for r in records(f)]  # oldest file first
    assert all(f.stat().st_size <= 65536 for f in files)
    assert kept == [f"rot-{k:02d}" for k in range(40 - len(kept), 40)]  # the newest, in order, none cut


def wait_serving(port: int, alive: subprocess.Popen[Any], timeout: float = 30) -> None:
    """Until the port answers health SERVING (a supervisor logs before its workers listen)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with RankingClient(f"127.0.0.1:{port}", timeout=2, retries=0) as c:
                if c.health() == "SERVING":
                    return
        except RankingError:
            pass
        assert time.monotonic() < deadline and alive.poll() is None, "server did not get to SERVING"
        time.sleep(0.1)


def load(port: int, prefix: str, until: threading.Event, answered: list[str], codes: list[str], n: int,
         unlogged: list[str] | None = None) -> None:
    """Rank until ``until``: the request ids answered with decision_logged true in ``answered``, false in
    ``unlogged`` (with None: in ``answered`` too), each error's code in ``codes``."""
    rng = random.Random(prefix)
    with RankingClient(f"127.0.0.1:{port}", retries=0, timeout=20) as c:
        k = 0
        while not until.is_set():
            rid = f"{prefix}-{k}"
            k += 1
            try:
                response = c.rank(request(rng, rid, n=n))
            except RankingError as err:
                codes.append(err.code.name)
            else:
                (answered if response.decision_logged or unlogged is None else unlogged).append(rid)


def _sigterm_under_load(tmp_path: Path, workers: int, **env: str) -> tuple[list[str], list[str], set[str]]:
    """SIGTERM after 2 s of 4 callers: the calls answered decision_logged true, those answered false, and the
    request ids of the records written."""
    path = tmp_path / "decisions.jsonl"
    port = free_port()
    proc = start_serve(tmp_path, "--address", f"127.0.0.1:{port}", "--metrics-port", "0", "--workers", str(workers),
                       env={"MEMRANK_DECISION_LOG_ENABLED": "true", "MEMRANK_DECISION_LOG_SINK": "file",
                            "MEMRANK_DECISION_LOG_PATH": str(path), **env})
    wait_serving(port, proc.popen)
    logged: list[str] = []
    unlogged: list[str] = []
    codes: list[str] = []
    until = threading.Event()
    threads = [threading.Thread(target=load, args=(port, f"t{k}", until, logged, codes, 40, unlogged))
               for k in range(4)]
    for t in threads:
        t.start()
    time.sleep(2.0)
    try:
        assert stop(proc) == 0
    finally:
        until.set()
        for t in threads:
            t.join()
    assert set(codes) <= {"UNAVAILABLE"}, codes
    return logged, unlogged, {r["request_id"] for r in records(path)}


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_under_load_loses_no_record_of_an_answered_call(tmp_path: Path, workers: int) -> None:
    """What decision_logged true promises holds through the drain: the record is written. A call answered
    false was not logged (its queue was full on a loaded machine: counted as dropped, issue #41 item 10)."""
    logged, unlogged, written = _sigterm_under_load(tmp_path, workers)
    assert len(logged) > 20
    assert not set(logged) - written, f"{len(set(logged) - written)} calls answered logged have no record"
    assert not set(unlogged) & written, "a call answered decision_logged false has a record"


def test_sigterm_with_the_decision_queue_full_loses_no_record_of_a_call_answered_logged(tmp_path: Path) -> None:
    """The loaded machine's case made certain: a queue of 1 record, most calls answered false."""
    logged, unlogged, written = _sigterm_under_load(tmp_path, 1, MEMRANK_DECISION_LOG_QUEUE_SIZE="1")
    assert logged and unlogged, (len(logged), len(unlogged))
    assert not set(logged) - written, f"{len(set(logged) - written)} calls answered logged have no record"
    assert not set(unlogged) & written, "a call answered decision_logged false has a record"


def test_two_workers_on_stdout_never_interleave_records_larger_than_a_pipe(tmp_path: Path) -> None:
    port = free_port()
    env = {"MEMRANK_DECISION_LOG_ENABLED": "true", "MEMRANK_DECISION_LOG_CONTENT": "plain"}
    import os

    out = tmp_path / "stdout"
    with out.open("wb") as sink_file, (tmp_path / "stderr").open("wb") as err_file:
        # stdout a pipe (as under a container runtime), drained by a thread into the file
        popen = subprocess.Popen([sys.executable, "-m", "memrank.cli", "serve", "--address", f"127.0.0.1:{port}",
                                  "--metrics-port", "0", "--workers", "2"], stdout=subprocess.PIPE, stderr=err_file,
                                 env={k: v for k, v in os.environ.items() if not k.startswith("MEMRANK_")} | env)
        assert popen.stdout is not None
        drain = threading.Thread(target=lambda: sink_file.write(popen.stdout.read()))  # type: ignore[union-attr]
        drain.start()
        try:
            wait_serving(port, popen)
            answered: list[str] = []
            codes: list[str] = []
            until = threading.Event()
            # 400 candidates of ~60 words in plain: each record is far past the 64 KiB pipe buffer
            threads = [threading.Thread(target=load, args=(port, f"w{k}", until, answered, codes, 400))
                       for k in range(4)]
            for t in threads:
                t.start()
            time.sleep(4.0)
            until.set()
            for t in threads:
                t.join()
        finally:
            popen.send_signal(signal.SIGTERM)
            assert popen.wait(30) == 0
            drain.join()
            popen.stdout.close()
    lines = out.read_bytes().splitlines()
    parsed = [json.loads(line) for line in lines]  # an interleaved line would not parse
    assert min(map(len, lines)) > 65536
    assert sorted(r["request_id"] for r in parsed) == sorted(answered) and len(answered) >= 4


def test_every_drop_reason_is_a_series_at_zero_from_the_start(tmp_path: Path) -> None:
    """The dashboard's drops panel, and an alert on a drop rate, read 0 for a log that dropped nothing, not
    "no data"."""
    registry = CollectorRegistry()
    running = create_server(logging_settings(tmp_path / "decisions.jsonl"), registry)
    try:
        counts = {reason: registry.get_sample_value("memrank_decision_log_dropped_total", {"reason": reason})
                  for reason in ("queue_full", "writer_down", "closed", "lost_after_ack", "write_error",
                                 "upload_failed", "buffer_full", "sampled_out")}
    finally:
        running.stop(5)
    assert counts == {"queue_full": 0, "writer_down": 0, "closed": 0, "lost_after_ack": 0, "write_error": 0,
                      "upload_failed": 0, "buffer_full": 0, "sampled_out": 0}


def test_a_full_queue_drops_and_counts_and_never_fails_a_call(tmp_path: Path) -> None:
    path = tmp_path / "decisions.jsonl"
    registry = CollectorRegistry()
    running = create_server(logging_settings(path, queue_size=1, content="plain"), registry)
    flags: dict[str, bool] = {}
    errors: list[str] = []

    def send(prefix: str) -> None:
        rng = random.Random(prefix)
        with RankingClient(f"127.0.0.1:{running.port}", retries=0, timeout=30) as c:
            for k in range(15):
                rid = f"{prefix}-{k}"
                try:
                    flags[rid] = c.rank(request(rng, rid, n=300)).decision_logged
                except RankingError as err:
                    errors.append(err.code.name)

    threads = [threading.Thread(target=send, args=(f"q{t}",)) for t in range(4)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        running.stop(10)
    assert not errors and len(flags) == 60
    logged = {r["request_id"] for r in records(path)}
    assert logged == {rid for rid, ok in flags.items() if ok}  # decision_logged tells the truth both ways
    dropped = registry.get_sample_value("memrank_decision_log_dropped_total", {"reason": "queue_full"})
    written = registry.get_sample_value("memrank_decision_log_records_total", {"kind": "decision"})
    assert dropped == 60 - len(logged) and dropped > 0, "a one-record queue under 4 callers never filled"
    assert written == len(logged)
