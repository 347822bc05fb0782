"""The chart's promotion job, run here end to end: a live `memrank serve` logs its decisions, feedback is recorded,
the CronJob's own command (rendered by the real helm) tunes, gates and promotes into the file the server reads,
and the server's next answers name the promoted weights' policy version, without a restart.

Two substitutions make the job's command runnable outside a cluster, and the test checks both are where it
expects them: the log and config paths point at this test's files, and `--configmap "$MEMRANK_PROMOTE_CONFIGMAP"`
becomes `--to-file "$MEMRANK_PROMOTE_FILE"` (no API server runs here; tests/promotion/test_promote.py covers the
ConfigMap write against a stand-in).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from memrank.client import RankingClient
from tests.support import fleet_log
from tests.support.helm import CHART, find_helm, run_helm, template_args
from tests.support.s3server import S3Server
from tests.support.servers import start_serve, stop

SUPPORT = {"relevance": 0.3, "lexical": 0.2, "context": 0.1, "speaker_pair": 0.1, "importance": 0.02, "thread": 0.1,
           "length": 0.08, "hop": 0.05, "statement": 0.02, "date": 0.03}
USERS, TURNS, CANDIDATES = 24, 6, 16
CONFIGMAP_WRITE = '--configmap "$MEMRANK_PROMOTE_CONFIGMAP"'


def job_command(tmp: Path, log: Path | str, config: Path) -> list[str]:
    """The promotion CronJob's container command as the chart renders it, pointed at local files."""
    helm = find_helm()
    if helm is None:
        pytest.skip("helm binary not found")
    values = {"promotion": {"enabled": True, "logs": ["s3://fleet-logs/decisions/"], "profile": "support",
                            "extraArgs": ["--seed", "5"]}}
    proc = run_helm(helm, *template_args(CHART, tmp, [values]), "--show-only", "templates/promotion-cronjob.yaml")
    assert proc.returncode == 0, proc.stderr
    container = yaml.safe_load(proc.stdout)["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    script, *args = container["args"]
    assert container["command"] == ["sh", "-c"] and CONFIGMAP_WRITE in script
    script = script.replace(CONFIGMAP_WRITE, '--to-file "$MEMRANK_PROMOTE_FILE"')
    script = script.replace("/tmp/promotion/", f"{tmp}/promotion/")
    local = {"s3://fleet-logs/decisions/": str(log), "/etc/memrank/config/memrank.yaml": str(config)}
    assert set(local) <= set(args)
    return ["sh", "-c", script, *[local.get(a, a) for a in args]]


def run_job(tmp: Path, command: list[str], served: Path,
            extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The command with `memrank` on PATH as this tree's CLI, as the image's entry point would be."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "memrank"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m memrank.cli "$@"\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMRANK_")}
    env |= {"PATH": f"{bin_dir}:{env['PATH']}", "MEMRANK_PROMOTE_PROFILE": "support",
            "MEMRANK_PROMOTE_FILE": str(served)} | (extra_env or {})
    return subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)


def served_config(tmp: Path) -> Path:
    path = tmp / "memrank.yaml"
    signals = [{"name": n, "weight": SUPPORT[n], "normalization": norm} for n, norm in fleet_log.SIGNALS]
    path.write_text(yaml.safe_dump({
        "decision_log": {"enabled": True, "sink": "file", "path": str(tmp / "decisions.jsonl"), "content": "hash",
                         "fsync": "every"},
        "profiles": {"support": {"base": "default", "signals": signals}}}))
    return path


def traffic(client: RankingClient, seed: int, users: range = range(USERS)) -> list[Any]:
    """Users' requests under `support`; the feedback marks the 3 of highest importance (plus a little noise)."""
    rng = np.random.default_rng(seed)
    responses = []
    for u in users:
        for t in range(TURNS):
            importance = np.round(rng.uniform(0.05, 1.0, CANDIDATES), 4)
            request = {"requestId": f"user-{u}/turn-{t}", "profile": "support", "query": "what did we decide",
                       "logDecision": True, "candidates": [
                           {"id": f"m{i}", "content": f"note {i} of user {u} turn {t}", "importance": importance[i],
                            "retrievalScore": float(rng.uniform(0.2, 0.9))} for i in range(CANDIDATES)]}
            response = client.rank(request)
            truth = importance + 0.05 * rng.standard_normal(CANDIDATES)
            client.record_feedback(response, {f"m{int(i)}": 1 for i in np.argsort(-truth)[:3]})
            responses.append(response)
    return responses


def wait_for_records(path: Path, n: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not (path.exists() and len(path.read_text().splitlines()) >= n):
        assert time.monotonic() < deadline, "the decision log did not receive every record"
        time.sleep(0.1)


def test_the_job_promotes_a_better_profile_and_the_live_server_serves_it(tmp_path: Path) -> None:
    config = served_config(tmp_path)
    key = tmp_path / "decision-log.key"
    key.write_bytes(os.urandom(32))
    proc = start_serve(tmp_path, "--config", str(config), "--address", "127.0.0.1:0", "--metrics-port", "0",
                       env={"MEMRANK_CONFIG_POLL_SECONDS": "0.2", "MEMRANK_DECISION_LOG_HASH_KEY_FILE": str(key)})
    try:
        with RankingClient(f"127.0.0.1:{proc.port}", timeout=10) as client:
            before = traffic(client, 1)
            wait_for_records(tmp_path / "decisions.jsonl", 2 * USERS * TURNS)
            job = run_job(tmp_path, job_command(tmp_path, tmp_path / "decisions.jsonl", config), config)
            assert job.returncode == 0, job.stdout + job.stderr
            gate = json.loads((tmp_path / "promotion" / "gate.json").read_text())
            assert gate["passed"] and gate["serving_profile"] == "support" and gate["held_out"]["ci95"][0] > 0
            promoted = job.stdout.strip().splitlines()[-1]
            assert promoted.startswith(f"memrank promote: {config}: profile 'support' set from ")
            after_version = promoted.rsplit("-> ", 1)[1].split()[0]
            assert after_version != before[0].policy_version
            probe = {"profile": "support", "query": "q", "candidates": [{"id": "a", "content": "x"}]}
            deadline = time.monotonic() + 15
            while (answer := client.rank(probe)).policy_version != after_version:
                assert time.monotonic() < deadline, "the server did not reload the promoted profile"
                time.sleep(0.1)
            assert answer.profile == "support"
            listed = next(p for p in client.list_profiles().profiles if p.name == "support")
            assert {w.signal: round(w.weight, 9) for w in listed.weights if w.weight} == {
                k: v for k, v in gate["weights"]["tuned"].items() if v}
            assert listed.weights and gate["weights"]["tuned"]["importance"] > SUPPORT["importance"]
    finally:
        assert stop(proc) == 0
    reloads = [line for line in proc.lines() if line["msg"] == "reloaded"]
    assert len(reloads) == 1 and reloads[0]["policy_version"] == after_version
    assert yaml.safe_load(config.read_text())["decision_log"]["content"] == "hash"  # the rest of the file stays


def test_a_gate_that_does_not_pass_ends_the_job_quietly_and_writes_nothing(tmp_path: Path) -> None:
    config = served_config(tmp_path)
    text = config.read_text()
    log = fleet_log.write(tmp_path / "noise.jsonl", fleet_log.records(2, users=30, turns=5, truth="noise",
                                                                       profile="support", weights=SUPPORT))
    job = run_job(tmp_path, job_command(tmp_path, log, config), config)
    assert job.returncode == 0, job.stderr
    assert "interval not above 0; profile not written" in job.stderr
    assert job.stdout.strip().splitlines()[-1] == ("memrank promotion: the tuned profile is not better on held-out "
                                                   "traffic; nothing promoted")
    assert config.read_text() == text and not json.loads((tmp_path / "promotion" / "gate.json").read_text())["passed"]


def test_two_servers_to_s3_to_one_promotion_that_both_serve(tmp_path: Path) -> None:
    """The issue's end-to-end: two servers log decisions and feedback through their S3 sink (`decision_log.sink:
    s3`) into a real S3-compatible server, the job's command tunes from s3://, the gate passes, the served file
    changes, both servers reload."""
    s3 = S3Server.launch(tmp_path / "s3")
    config = served_config(tmp_path)
    key = tmp_path / "decision-log.key"
    key.write_bytes(os.urandom(32))
    procs = []
    try:
        for _ in ("a", "b"):
            procs.append(start_serve(tmp_path, "--config", str(config), "--address", "127.0.0.1:0",
                                     "--metrics-port", "0", env=s3.env() | {
                                         "MEMRANK_CONFIG_POLL_SECONDS": "0.2",
                                         "MEMRANK_DECISION_LOG_HASH_KEY_FILE": str(key),
                                         "MEMRANK_DECISION_LOG_SINK": "s3",
                                         "MEMRANK_DECISION_LOG_S3_URL": f"s3://{s3.bucket}/fleet/",
                                         "MEMRANK_DECISION_LOG_S3_ENDPOINT": s3.endpoint,
                                         "MEMRANK_DECISION_LOG_S3_BATCH_SECONDS": "0.5"}))
        halves = (range(0, USERS // 2), range(USERS // 2, USERS))
        clients = [RankingClient(f"127.0.0.1:{p.port}", timeout=10) for p in procs]
        try:
            first = [traffic(c, i + 1, users)[0] for i, (c, users) in enumerate(zip(clients, halves, strict=True))]
            wait_for_objects(s3, "fleet/", 2 * USERS * TURNS)  # every decision and feedback record, both pods
            env = s3.env() | {"AWS_ENDPOINT_URL": s3.endpoint}
            job = run_job(tmp_path, job_command(tmp_path, f"s3://{s3.bucket}/fleet/", config), config, env)
            assert job.returncode == 0, job.stdout + job.stderr
            assert f"{USERS * TURNS} decisions" in job.stdout  # both pods' records, read from S3
            promoted = job.stdout.strip().splitlines()[-1]
            assert promoted.startswith(f"memrank promote: {config}: profile 'support' set from ")
            after_version = promoted.rsplit("-> ", 1)[1].split()[0]
            probe = {"profile": "support", "query": "q", "candidates": [{"id": "a", "content": "x"}]}
            for client, before in zip(clients, first, strict=True):
                deadline = time.monotonic() + 15
                while (answer := client.rank(probe)).policy_version != after_version:
                    assert time.monotonic() < deadline, "a server did not reload the promoted profile"
                    time.sleep(0.1)
                assert answer.profile == "support" and before.policy_version != after_version
        finally:
            for c in clients:
                c.close()
    finally:
        for p in procs:
            assert stop(p) == 0
        s3.close()


def wait_for_objects(s3: S3Server, prefix: str, records: int, seconds: float = 30) -> None:
    """Until the gzipped JSON-lines objects under ``prefix`` hold ``records`` lines, from more than one writer."""
    deadline = time.monotonic() + seconds
    while True:
        keys = s3.keys(prefix)
        lines = sum(gzip.decompress(s3.get(k)).count(b"\n") for k in keys)
        writers = {k.rsplit("/", 1)[1].rsplit("-", 1)[0] for k in keys}
        if lines >= records and len(writers) >= 2:
            assert lines == records, f"{lines} records under {prefix}, expected {records}"
            assert all("/dt=" in k and "/hour=" in k and k.endswith(".jsonl.gz") for k in keys), keys
            return
        assert time.monotonic() < deadline, f"{lines} of {records} records reached S3 from {len(writers)} writers"
        time.sleep(0.2)
