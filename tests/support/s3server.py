"""A real S3-compatible server for tests: gofakes3 (github.com/johannesboyne/gofakes3, a small S3 protocol server
over a bbolt file), built from the Go module proxy on first use, started on a free loopback port with one bucket.

Use the session fixture ``s3_server`` (registered by tests/support/plugin.py)::

    def test_upload(s3_server: S3Server) -> None:
        s3 = s3_server.client()                      # a boto3 S3 client for the server
        s3.put_object(Bucket=s3_server.bucket, Key="t/a", Body=b"x")
        assert s3_server.keys("t/") == ["t/a"]       # sorted keys under a prefix
        assert s3_server.get("t/a") == b"x"

Its fields: ``endpoint`` (http://127.0.0.1:PORT), ``access_key``, ``secret_key``, ``region``, ``bucket``;
``env()`` gives the AWS_* variables a subprocess (``memrank serve``) needs to reach it. The session's server is
shared: give each test a key prefix of its own. A test that stops the server (``stop()``, later ``start()`` on
the same port and data) starts one of its own with ``S3Server.launch(tmp_path)`` and ``close()``s it.

gofakes3 speaks the S3 REST protocol (path-style; SigV4 headers accepted, not verified: any credentials do).
SeaweedFS's S3 gateway, which also checks signatures, was tried first: its go.mod has replace directives, so
``go install pkg@version`` refuses it, and building it in the module cache took over 20 minutes on a 2-core
machine (hundreds of modules), too long for a test fixture. gofakes3 builds in under a minute (``go install``,
cached in build/s3server/, ignored by git). Without Go the tests skip (fail in CI).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.servers import free_port

GOFAKES3 = "github.com/johannesboyne/gofakes3/cmd/gofakes3"
GOFAKES3_VERSION = "v1.2.0"
BUILD = Path(__file__).resolve().parents[2] / "build" / "s3server"
IN_CI = bool(os.environ.get("CI"))


def _missing(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"{reason} (CI must provide it)")
    pytest.skip(reason)


def server_binary() -> Path:
    """build/s3server/gofakes3-<version>, built once (under a lock: parallel test processes build it once)."""
    binary = BUILD / f"gofakes3-{GOFAKES3_VERSION}"
    if binary.is_file():
        return binary
    go = shutil.which("go")
    if go is None:
        _missing("go not found: the S3 test server (gofakes3) is built from the Go module proxy")
    assert go is not None
    BUILD.mkdir(parents=True, exist_ok=True)
    with (BUILD / "build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not binary.is_file():
            gobin = BUILD / "gobin"
            built = subprocess.run([go, "install", f"{GOFAKES3}@{GOFAKES3_VERSION}"], capture_output=True,
                                   text=True, env=os.environ | {"GOBIN": str(gobin)}, timeout=900, check=False)
            assert built.returncode == 0, f"go install {GOFAKES3}@{GOFAKES3_VERSION} failed: {built.stderr}"
            (gobin / "gofakes3").replace(binary)
    return binary


@dataclass
class S3Server:
    """A running S3 server on loopback: its endpoint, credentials and bucket (see the module's docstring)."""

    data: Path
    bucket: str = "memrank-test"
    access_key: str = "memrank-test-access"
    secret_key: str = "memrank-test-secret-key-0123456789"
    region: str = "us-east-1"
    port: int = 0
    _proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        """The S3 endpoint URL."""
        return f"http://127.0.0.1:{self.port}"

    @classmethod
    def launch(cls, data: Path, bucket: str = "memrank-test") -> S3Server:
        """Build (once), start on a free port keeping its objects under ``data``, with ``bucket``; ``close()``."""
        server = cls(data=data, bucket=bucket, port=free_port())
        server.start()
        return server

    def start(self, timeout: float = 30) -> None:
        """Start (or restart, on the same port and data) and wait until it answers S3 calls."""
        assert self._proc is None, "already running"
        self.data.mkdir(parents=True, exist_ok=True)
        args = [str(server_binary()), "-host", f"127.0.0.1:{self.port}", "-backend", "bolt",
                "-bolt.db", str(self.data / "s3.db"), "-initialbucket", self.bucket]
        with (self.data / "server.log").open("ab") as log:
            self._proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          start_new_session=True)
        deadline = time.monotonic() + timeout
        s3 = self.client()
        while True:
            if self._proc.poll() is not None:
                raise AssertionError(f"the S3 server exited {self._proc.returncode}: {self.log_tail()}")
            try:
                s3.head_bucket(Bucket=self.bucket)
                return
            except Exception:  # not listening yet
                if time.monotonic() > deadline:
                    self.stop()
                    raise AssertionError(f"the S3 server did not answer in {timeout} s: {self.log_tail()}") from None
                time.sleep(0.05)

    def stop(self) -> None:
        """Stop the server (SIGTERM, SIGKILL after 10 s); its objects stay for ``start()``."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    close = stop

    def log_tail(self, n: int = 3000) -> str:
        """The end of the server's log."""
        path = self.data / "server.log"
        return path.read_text(errors="replace")[-n:] if path.exists() else ""

    def env(self) -> dict[str, str]:
        """The standard AWS variables that point boto3 (and so a ``memrank serve`` subprocess) at this server's
        credentials and region; the endpoint itself is memrank's ``decision_log.s3_endpoint``."""
        return {"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key,
                "AWS_REGION": self.region, "AWS_EC2_METADATA_DISABLED": "true"}

    def client(self) -> Any:
        """A boto3 S3 client for this server (path-style addressing, no retries: a test sees each failure)."""
        import boto3
        from botocore.config import Config

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=self.access_key,
                            aws_secret_access_key=self.secret_key, region_name=self.region,
                            config=Config(s3={"addressing_style": "path"}, retries={"total_max_attempts": 1},
                                          connect_timeout=2, read_timeout=10))

    def keys(self, prefix: str = "") -> list[str]:
        """Every key under ``prefix`` in the bucket, sorted."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        return sorted(obj["Key"] for page in pages for obj in page.get("Contents", []))

    def get(self, key: str) -> bytes:
        """One object's bytes."""
        body: bytes = self.client().get_object(Bucket=self.bucket, Key=key)["Body"].read()
        return body
