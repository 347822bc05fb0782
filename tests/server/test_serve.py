"""`memrank serve` as a user runs it: a real process, health, reflection, config, signals, workers."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from memrank.client import RankingClient, RankingError
from tests.support.servers import start_serve, stop


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _memrank(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMRANK_")}
    return subprocess.run([sys.executable, "-m", "memrank.cli", *args], capture_output=True, text=True,
                          env=base | (env or {}), timeout=60)


def test_serve_answers_health_and_reflection_then_drains_on_sigterm(tmp_path: Path) -> None:
    proc = start_serve(tmp_path, "--address", "127.0.0.1:0", "--metrics-port", "0")
    target = f"127.0.0.1:{proc.port}"
    with RankingClient(target) as client:
        assert client.health() == "SERVING"
        assert client.health("memrank.v1.RankingService") == "SERVING"
    with grpc.insecure_channel(target) as channel:
        services = ProtoReflectionDescriptorDatabase(channel).get_services()
    assert "memrank.v1.RankingService" in services
    assert "grpc.health.v1.Health" in services
    assert stop(proc) == 0
    messages = [line["msg"] for line in proc.lines()]
    assert messages.index("draining") < messages.index("stopped")


@pytest.mark.skipif(shutil.which("grpcurl") is None and not os.environ.get("CI"), reason="grpcurl not installed")
def test_grpcurl_works_without_proto_files(tmp_path: Path) -> None:
    proc = start_serve(tmp_path, "--address", "127.0.0.1:0", "--metrics-port", "0")
    try:
        target = f"127.0.0.1:{proc.port}"
        listed = subprocess.run(["grpcurl", "-plaintext", target, "list"], capture_output=True, text=True,
                                timeout=30, check=True)
        assert "memrank.v1.RankingService" in listed.stdout.split()
        body = json.dumps({"query": "tea", "candidates": [{"id": "a", "retrievalScore": 0.4, "importance": 0.5,
                                                           "content": "The user prefers green tea."}]})
        ranked = subprocess.run(["grpcurl", "-plaintext", "-d", body, target, "memrank.v1.RankingService/Rank"],
                                capture_output=True, text=True, timeout=30, check=True)
        assert json.loads(ranked.stdout)["selected"][0]["id"] == "a"
    finally:
        assert stop(proc) == 0


def test_print_config_shows_flag_env_and_file_precedence(tmp_path: Path) -> None:
    config = tmp_path / "memrank.yaml"
    config.write_text("server:\n  workers: 3\n  log_level: warning\nlimits:\n  max_candidates: 50\n")
    out = _memrank("serve", "--config", str(config), "--print-config", "--log-level", "error",
                   env={"MEMRANK_WORKERS": "2"})
    assert out.returncode == 0, out.stderr
    assert "workers: 2" in out.stdout  # env beats file
    assert "log_level: error" in out.stdout  # flag beats file
    assert "max_candidates: 50" in out.stdout  # file beats defaults
    assert "address: 0.0.0.0:50051" in out.stdout  # built-in default


@pytest.mark.parametrize(
    ("yaml_text", "needle"),
    [
        ("server:\n  workers: -1\n", "server.workers: -1"),
        ("server:\n  adress: x\n", "server.adress: unknown key"),
        ("limits:\n  max_candidates: many\n", "limits.max_candidates: expected int, got 'many'"),
        ("profiles:\n  mine:\n    signals: [{name: relevance, weight: 1, normalization: zz}]\n",
         "profiles.mine.signals[0].normalization: 'zz'"),
        ("server:\n  log_level: loud\n", "server.log_level: 'loud'"),
    ],
)
def test_invalid_config_fails_at_start_naming_key_and_value(tmp_path: Path, yaml_text: str, needle: str) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(yaml_text)
    out = _memrank("serve", "--config", str(config))
    assert out.returncode == 2
    assert needle in out.stderr


def test_config_file_limits_apply_to_requests(tmp_path: Path) -> None:
    config = tmp_path / "small.yaml"
    config.write_text("limits:\n  max_candidates: 3\n")
    proc = start_serve(tmp_path, "--config", str(config), "--address", "127.0.0.1:0", "--metrics-port", "0")
    try:
        with RankingClient(f"127.0.0.1:{proc.port}") as client:
            client.rank({"candidates": [{"id": str(i)} for i in range(3)]})
            with pytest.raises(Exception, match=r"at most 3 \(limits.max_candidates\)"):
                client.rank({"candidates": [{"id": str(i)} for i in range(4)]})
    finally:
        assert stop(proc) == 0


def test_two_workers_share_one_port_and_both_drain(tmp_path: Path) -> None:
    port = _free_port()
    proc = start_serve(tmp_path, "--address", f"127.0.0.1:{port}", "--metrics-port", "0", "--workers", "2")
    try:
        with RankingClient(f"127.0.0.1:{port}", retries=10) as client:
            assert client.health() == "SERVING"
            for i in range(20):
                resp = client.rank({"candidates": [{"id": "a", "retrievalScore": 0.1 + 0.09 * (i % 10),
                                                    "importance": 0.5}]})  # at or above default's floor
                assert [m.id for m in resp.selected] == ["a"]
    finally:
        assert stop(proc) == 0
    started = [line for line in proc.lines() if line["msg"] == "worker starting"]
    assert sorted(int(str(line["worker"])) for line in started) == [0, 1]


def test_workers_default_to_one_per_cpu_on_a_named_port(tmp_path: Path) -> None:
    cpus = len(os.sched_getaffinity(0))
    port = _free_port()
    proc = start_serve(tmp_path, "--address", f"127.0.0.1:{port}", "--metrics-port", "0")  # no --workers
    try:
        with RankingClient(f"127.0.0.1:{port}", retries=10) as client:
            assert client.health() == "SERVING"
            resp = client.rank({"candidates": [{"id": "a", "retrievalScore": 0.5, "importance": 0.5}]})
            assert [m.id for m in resp.selected] == ["a"]
    finally:
        assert stop(proc) == 0
    auto = [line for line in proc.lines() if line["msg"] == "workers: auto"]
    assert [(int(str(line["workers"])), int(str(line["cpus"]))) for line in auto] == [(cpus, cpus)]
    if cpus > 1:
        started = [line for line in proc.lines() if line["msg"] == "worker starting"]
        assert sorted(int(str(line["worker"])) for line in started) == list(range(cpus))


def test_workers_default_to_one_on_an_os_picked_port(tmp_path: Path) -> None:
    proc = start_serve(tmp_path, "--address", "127.0.0.1:0", "--metrics-port", "0")
    try:
        with RankingClient(f"127.0.0.1:{proc.port}") as client:
            assert client.health() == "SERVING"
    finally:
        assert stop(proc) == 0
    auto = [line for line in proc.lines() if line["msg"] == "workers: auto"]
    assert [int(str(line["workers"])) for line in auto] == [1]
    assert not [line for line in proc.lines() if line["msg"] == "worker starting"]


def test_rank_command_prints_a_response(tmp_path: Path) -> None:
    request = tmp_path / "req.json"
    request.write_text(json.dumps({"requestId": "cli", "referenceTime": "2026-01-01T00:00:00Z",
                                   "candidates": [{"id": "a", "retrievalScore": 0.2, "importance": 0.3},
                                                  {"id": "b", "retrievalScore": 0.9, "importance": 0.3}]}))
    out = _memrank("rank", str(request))
    assert out.returncode == 0, out.stderr
    resp = json.loads(out.stdout)
    assert resp["requestId"] == "cli"
    assert {m["id"] for m in resp["selected"]} | {d["id"] for d in resp.get("dropped", [])} == {"a", "b"}


def test_rank_command_reports_bad_fields(tmp_path: Path) -> None:
    request = tmp_path / "bad.json"
    request.write_text(json.dumps({"candidates": [{"id": "a"}, {"id": "a"}]}))
    out = _memrank("rank", str(request))
    assert out.returncode == 2
    assert "INVALID_ARGUMENT candidates[1].id" in out.stderr


def test_profiles_command_lists_weights() -> None:
    out = _memrank("profiles")
    assert out.returncode == 0
    assert out.stdout.startswith(("agent-observer", "assistant", "default"))
    assert "weight" in out.stdout


def test_oversize_message_is_refused_with_resource_exhausted(tmp_path: Path) -> None:
    config = tmp_path / "tiny.yaml"
    config.write_text("server:\n  max_message_bytes: 4096\n")
    proc = start_serve(tmp_path, "--config", str(config), "--address", "127.0.0.1:0", "--metrics-port", "0")
    try:
        with RankingClient(f"127.0.0.1:{proc.port}", retries=0) as client:
            client.rank({"candidates": [{"id": "a", "content": "x" * 1000, "importance": 0.5}]})
            with pytest.raises(RankingError) as info:
                client.rank({"candidates": [{"id": "a", "content": "x" * 8000}]})
            assert info.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert client.health() == "SERVING"
    finally:
        assert stop(proc) == 0
