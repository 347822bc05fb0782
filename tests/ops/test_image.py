"""The container image (issue 22), run as the chart runs it.

scripts/ci_image.sh builds localhost/memrank:<version> with Debian's buildah
(root, vfs storage, chroot isolation) on a stand-in base made from Debian
packages; these tests run that image with podman (vfs storage, runc, cgroupfs,
the host's network) as the chart's securityContext asks: the image's own user
(10001), a read-only root filesystem with a writable tmpfs at /tmp, no
capabilities, no privilege escalation. From the host, memrank's Python client
waits for grpc.health.v1 SERVING, sends one Rank and reads /metrics; then
SIGTERM must end the container with exit code 0 within the grace period.

Without buildah (or podman and runc, or root) the tests skip, except in CI
(env CI set), where they fail: .ci/run installs the tools and builds the
image first. When buildah is there but the image is not, the fixture builds
it with scripts/ci_image.sh.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

from memrank import __version__
from memrank.client import RankingClient

ROOT = Path(__file__).resolve().parents[2]
IN_CI = bool(os.environ.get("CI"))
# `buildah bud -t memrank:X` and `docker build -t memrank:X` name the same image;
# buildah and podman keep unqualified local names under localhost/.
TAG = f"memrank:{__version__}"
IMAGE = f"localhost/{TAG}"
BUILDAH = ["buildah", "--storage-driver", "vfs"]
# runc, not crun: crun refuses this kind of host's hybrid cgroup v1/v2 hierarchy.
PODMAN = ["podman", "--storage-driver", "vfs", "--cgroup-manager", "cgroupfs", "--runtime", "runc"]
# Container limits at or below podman's own: without CAP_SYS_RESOURCE (a sandboxed
# CI host) the runtime cannot raise them to podman's defaults (1048576 files).
ULIMITS = ["--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096"]
GRACE_SECONDS = 10  # the chart's server.gracePeriodSeconds and the server's default


def missing(reason: str) -> None:
    """Fail in CI, skip elsewhere."""
    if IN_CI:
        pytest.fail(f"{reason} (CI must provide it: .ci/run runs scripts/ci_image.sh)")
    pytest.skip(reason)


def run(*cmd: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=check, timeout=timeout)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def image() -> dict[str, Any]:
    """The image's config (buildah inspect), built first if it is not in local storage."""
    if shutil.which("buildah") is None:
        missing("buildah is not installed (Debian package buildah; scripts/ci_image.sh installs it)")
    absent = [tool for tool in ("podman", "runc") if shutil.which(tool) is None]
    if absent:
        missing(f"{' and '.join(absent)} not installed: the tests run the image with them (scripts/ci_image.sh)")
    if os.geteuid() != 0:
        missing("the image is built and run as root (vfs storage, chroot isolation)")
    if run(*BUILDAH, "inspect", "--type", "image", IMAGE, check=False).returncode != 0:
        subprocess.run(["bash", str(ROOT / "scripts" / "ci_image.sh")], check=True, timeout=900)
    config: dict[str, Any] = json.loads(run(*BUILDAH, "inspect", "--type", "image", IMAGE).stdout)
    return config


def test_image_config(image: dict[str, Any]) -> None:
    """Non-root user, `memrank serve` under env's signal block as the entrypoint, both ports exposed, no healthcheck."""
    cfg = image["OCIv1"]["config"]
    assert cfg["User"] == "10001:10001"
    assert cfg["Entrypoint"] == ["env", "--block-signal=HUP,TERM,INT", "memrank", "serve"]
    assert any(e.startswith("PATH=/opt/memrank/bin:") for e in cfg["Env"]), cfg["Env"]
    assert cfg["Labels"]["org.opencontainers.image.title"] == "memrank"
    assert set(cfg["ExposedPorts"]) == {"50051/tcp", "9464/tcp"}
    assert "Healthcheck" not in cfg and "HEALTHCHECK" not in json.dumps(image.get("Docker", {}).get("config", {}))


class Container:
    """One `podman run` of the image in the foreground; its log is its stdout."""

    def __init__(self, log: Path, env: dict[str, str]) -> None:
        self.name = f"memrank-test-{os.getpid()}-{time.monotonic_ns()}"
        self.log = log
        self.handle = log.open("w")
        envs = [a for k, v in env.items() for a in ("--env", f"{k}={v}")]
        self.popen = subprocess.Popen(
            [*PODMAN, "run", "--name", self.name, "--network", "host", "--read-only",
             "--tmpfs", "/tmp:rw,size=64m,mode=1777", "--cap-drop", "ALL",
             "--security-opt", "no-new-privileges", *ULIMITS, *envs, IMAGE],
            stdout=self.handle, stderr=subprocess.STDOUT, text=True)

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(x) for x in self.log.read_text().splitlines() if x.startswith("{")]

    def exec(self, script: str) -> subprocess.CompletedProcess[str]:
        return run(*PODMAN, "exec", self.name, "/bin/sh", "-c", script, check=False)

    def remove(self) -> None:
        if self.popen.poll() is None:
            run(*PODMAN, "kill", "--signal", "KILL", self.name, check=False)
            try:
                self.popen.wait(30)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        run(*PODMAN, "rm", "--force", self.name, check=False)
        self.handle.close()


@pytest.fixture()
def container(image: dict[str, Any], tmp_path: Path) -> Iterator[tuple[Container, int, int]]:
    grpc_port, metrics_port = free_port(), free_port()
    # Two workers: the supervisor keeps the workers' metrics files in /tmp, the only writable path.
    c = Container(tmp_path / "container.log", {
        "MEMRANK_ADDRESS": f"127.0.0.1:{grpc_port}",
        "MEMRANK_METRICS_PORT": str(metrics_port),
        "MEMRANK_WORKERS": "2",
        "MEMRANK_GRACE_PERIOD_SECONDS": str(GRACE_SECONDS),
    })
    try:
        yield c, grpc_port, metrics_port
    finally:
        c.remove()


def wait_serving(c: Container, port: int, timeout: float = 120) -> None:
    """grpc.health.v1 SERVING for the whole server and for the service the chart probes."""
    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        health = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            if c.popen.poll() is not None:
                pytest.fail(f"the container exited {c.popen.returncode} before serving:\n{c.log.read_text()}")
            try:
                statuses = {svc: health.Check(health_pb2.HealthCheckRequest(service=svc), timeout=2).status
                            for svc in ("", "memrank.v1.RankingService")}
            except grpc.RpcError:
                time.sleep(0.25)
                continue
            if set(statuses.values()) == {health_pb2.HealthCheckResponse.SERVING}:
                return
            time.sleep(0.25)
    pytest.fail(f"not SERVING within {timeout} s:\n{c.log.read_text()}")


def test_container_serves_and_stops_on_sigterm(container: tuple[Container, int, int]) -> None:
    c, grpc_port, metrics_port = container
    wait_serving(c, grpc_port)

    # The image's own user, with no --user given; a read-only root and a writable /tmp.
    pid = run(*PODMAN, "inspect", "--format", "{{.State.Pid}}", c.name).stdout.strip()
    uids = re.search(r"^Uid:\s+(.*)$", Path(f"/proc/{pid}/status").read_text(), re.M)
    assert uids is not None and uids.group(1).split() == ["10001"] * 4
    probe = c.exec("id -u; touch /opt/memrank/x 2>&1; touch /tmp/x && echo tmp-writable")
    assert probe.stdout.splitlines()[0] == "10001"
    assert "Read-only file system" in probe.stdout and "tmp-writable" in probe.stdout, probe.stdout
    # Lean runtime: no compilers, no pip, no build files.
    lean = c.exec("for t in gcc cc c++ make pip pip3; do command -v $t; done; ls -d /src /wheels 2>/dev/null;"
                  " ls /opt/memrank/bin | grep -i pip; true")
    assert lean.stdout.strip() == "", f"build tools or files in the runtime image: {lean.stdout}"
    version = c.exec("memrank --version")
    assert version.stdout.split()[:2] == ["memrank", __version__], version.stdout + version.stderr

    with RankingClient(f"127.0.0.1:{grpc_port}", timeout=10) as client:
        resp = client.rank({
            "query": "what tea does the user like?",
            "referenceTime": "2026-06-01T12:00:00Z",
            "candidates": [
                {"id": "m1", "content": "The user prefers green tea, no sugar.", "retrievalScore": 0.82,
                 "kind": "preference", "createdAt": "2026-05-30T09:00:00Z"},
                {"id": "m2", "content": "thanks!", "retrievalScore": 0.40},
            ],
            "budget": {"maxTokens": 512},
        })
    assert resp.selected and resp.selected[0].id == "m1"
    assert {m.id for m in resp.selected} | {d.id for d in resp.dropped} == {"m1", "m2"}

    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as r:
        assert r.status == 200
        metrics = r.read().decode()
    ok = re.search(r'^memrank_requests_total\{(?=[^}]*method="Rank")(?=[^}]*code="OK")[^}]*\} (\S+)$', metrics, re.M)
    assert ok is not None and float(ok.group(1)) == 1.0, "one Rank counted, over both workers"

    start = time.monotonic()
    run(*PODMAN, "kill", "--signal", "TERM", c.name)
    try:
        rc = c.popen.wait(GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running {GRACE_SECONDS} s after SIGTERM:\n{c.log.read_text()}")
    elapsed = time.monotonic() - start
    assert rc == 0, f"exit code {rc} after SIGTERM:\n{c.log.read_text()}"
    assert run(*PODMAN, "inspect", "--format", "{{.State.ExitCode}}", c.name).stdout.strip() == "0"
    assert any(x.get("msg") == "stopped" for x in c.lines()), c.log.read_text()
    assert elapsed < GRACE_SECONDS


def test_names_agree() -> None:
    """The Dockerfile's docker lines, the chart's default image and the built tag are one (the docs' lines are
    prose, not checked here: the tag they show is the package version, as this test pins it)."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert f"docker build -t {TAG} ." in dockerfile
    assert re.search(rf"docker run [^\n]*{re.escape(TAG)}$", dockerfile, re.M)
    values = yaml.safe_load((ROOT / "helm" / "memrank" / "values.yaml").read_text())["image"]
    chart = yaml.safe_load((ROOT / "helm" / "memrank" / "Chart.yaml").read_text())
    assert f"{values['repository']}:{values['tag'] or chart['appVersion']}" == TAG
    script = (ROOT / "scripts" / "ci_image.sh").read_text()
    assert 'IMAGE="${MEMRANK_IMAGE:-localhost/memrank:${VERSION}}"' in script
    assert re.search(r"^ARG BASE_IMAGE=docker\.io/library/python:3\.12-slim$", dockerfile, re.M)
    assert "STOPSIGNAL" not in dockerfile, "the server stops on SIGTERM, the runtimes' default"
