"""Settings: precedence and errors that name the key and the value."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from memrank.config import load_settings
from memrank.core.errors import ConfigError


def test_builtin_defaults_load_without_a_file() -> None:
    s = load_settings(env={})
    assert s.server.address == "0.0.0.0:50051"
    assert s.server.metrics_port == 9464
    assert s.limits.max_candidates == 1600
    assert "default" in s.profiles
    # 1,600 x 4,096-dim float32 embeddings must fit the default message size.
    assert s.server.max_message_bytes >= 1600 * 4096 * 4


def test_precedence_defaults_file_env_overrides(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("server:\n  workers: 3\n  thread_pool_size: 5\n")
    s = load_settings(str(f), env={"MEMRANK_WORKERS": "4", "MEMRANK_THREAD_POOL_SIZE": "6"},
                      overrides={"server.workers": 2})
    assert (s.server.workers, s.server.thread_pool_size) == (2, 6)


def test_policy_version_changes_with_profiles(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("profiles:\n  mine:\n    base: default\n    min_score: 0.2\n")
    assert load_settings(str(f), env={}).policy_version != load_settings(env={}).policy_version
    assert load_settings(str(f), env={}).profiles["mine"].min_score == 0.2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("server:\n  address: nonsense\n", "server.address: expected host:port, got 'nonsense'"),
        ("nope: 1\n", "nope: unknown key"),
        ("layers:\n  - {name: a, share: -1}\n", "layers[0].share: -1.0 must be >= 0"),
        ("profiles:\n  x:\n    base: missing\n", "profiles.x.base: unknown profile 'missing'"),
        ("profiles:\n  x:\n    signals: [{name: r, weight: 1}]\n    fusion: avg\n", "profiles.x.fusion: 'avg'"),
    ],
)
def test_errors_name_the_key_and_value(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(text)
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_settings(str(f), env={})


def test_missing_key_file_is_reported_with_the_key(tmp_path: Path) -> None:
    s = load_settings(env={"MEMRANK_PROVENANCE_KEY_FILE": str(tmp_path / "absent")})
    with pytest.raises(ConfigError, match=r"security\.provenance_key_file: cannot read"):
        s.provenance_key()


def test_client_bounds_have_documented_defaults_and_come_from_file_and_env(tmp_path: Path) -> None:
    s = load_settings(env={}).server
    assert (s.request_read_timeout_seconds, s.max_streams_per_connection, s.max_connection_idle_seconds,
            s.max_connection_age_seconds, s.max_connection_age_grace_seconds, s.keepalive_time_seconds,
            s.keepalive_timeout_seconds) == (10, 32, 300, 1800, 30, 60, 20)
    f = tmp_path / "c.yaml"
    f.write_text("server:\n  request_read_timeout_seconds: 3\n  max_connection_age_seconds: 0\n")
    s = load_settings(str(f), env={"MEMRANK_REQUEST_READ_TIMEOUT_SECONDS": "2.5",
                                   "MEMRANK_MAX_STREAMS_PER_CONNECTION": "8",
                                   "MEMRANK_MAX_CONNECTION_IDLE_SECONDS": "0",
                                   "MEMRANK_MAX_CONNECTION_AGE_GRACE_SECONDS": "5",
                                   "MEMRANK_KEEPALIVE_TIME_SECONDS": "30",
                                   "MEMRANK_KEEPALIVE_TIMEOUT_SECONDS": "10"}).server
    assert (s.request_read_timeout_seconds, s.max_streams_per_connection, s.max_connection_idle_seconds,
            s.max_connection_age_seconds, s.max_connection_age_grace_seconds, s.keepalive_time_seconds,
            s.keepalive_timeout_seconds) == (2.5, 8, 0, 0, 5, 30, 10)


@pytest.mark.parametrize(
    ("var", "value", "message"),
    [
        ("MEMRANK_REQUEST_READ_TIMEOUT_SECONDS", "0",
         "server.request_read_timeout_seconds: 0.0 is outside [0.1, 3600]"),
        ("MEMRANK_MAX_STREAMS_PER_CONNECTION", "0", "server.max_streams_per_connection: 0 is outside [1, 100000]"),
        ("MEMRANK_MAX_STREAMS_PER_CONNECTION", "1.5", "server.max_streams_per_connection: expected int, got '1.5'"),
        ("MEMRANK_MAX_CONNECTION_IDLE_SECONDS", "-1", "server.max_connection_idle_seconds: -1.0 is outside [0, 86400]"),
        ("MEMRANK_MAX_CONNECTION_AGE_SECONDS", "inf", "server.max_connection_age_seconds: expected a finite number"),
        ("MEMRANK_MAX_CONNECTION_AGE_GRACE_SECONDS", "7200",
         "server.max_connection_age_grace_seconds: 7200.0 is outside [0, 3600]"),
        ("MEMRANK_KEEPALIVE_TIME_SECONDS", "0.01", "server.keepalive_time_seconds: 0.01 is outside [0.1, 86400]"),
        ("MEMRANK_KEEPALIVE_TIMEOUT_SECONDS", "soon", "server.keepalive_timeout_seconds: expected float, got 'soon'"),
    ],
)
def test_client_bounds_out_of_range_are_refused_naming_the_key(var: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_settings(env={var: value})


def test_version_is_one_source() -> None:
    # memrank --version, the package metadata and memrank.__version__ agree (pyproject reads the attribute).
    import importlib.metadata
    import subprocess
    import sys

    import memrank

    out = subprocess.run([sys.executable, "-m", "memrank.cli", "--version"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == f"memrank {memrank.__version__} (wire API memrank.v1)"
    # The distribution is memrank-sidecar (PyPI's "memrank" is another project); the import package is memrank.
    assert importlib.metadata.version("memrank-sidecar") == memrank.__version__


def test_metrics_listen_where_grpc_listens_unless_told_otherwise() -> None:
    s = load_settings(env={}).server
    assert s.metrics_address == "" and s.metrics_host == "0.0.0.0"  # the default address 0.0.0.0:50051
    assert replace(s, address="127.0.0.1:50051").metrics_host == "127.0.0.1"
    assert replace(s, address="[::1]:50051").metrics_host == "::1"
    assert replace(s, address="127.0.0.1:50051", metrics_address="0.0.0.0").metrics_host == "0.0.0.0"
    assert load_settings(env={"MEMRANK_METRICS_ADDRESS": "127.0.0.2"}).server.metrics_host == "127.0.0.2"
