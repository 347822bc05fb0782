"""Settings: precedence and errors that name the key and the value."""

from __future__ import annotations

import re
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from memrank.config import BOUNDS, ENV_KEYS, Settings, SettingsSource, load_settings
from memrank.core.batch import LayerSpec
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


def test_a_profile_may_name_a_base_defined_after_it(tmp_path: Path) -> None:
    """Bases resolve in dependency order, not file order (issue #41, item 9)."""
    f = tmp_path / "c.yaml"
    f.write_text("profiles:\n  top:\n    base: mid\n    min_score: 0.3\n  mid:\n    base: default\n"
                 "    min_score: 0.2\n    description: mid\n")
    profiles = load_settings(str(f), env={}).profiles
    assert (profiles["top"].min_score, profiles["top"].description, profiles["mid"].min_score) == (0.3, "mid", 0.2)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("server:\n  address: nonsense\n", "server.address: expected host:port, got 'nonsense'"),
        ("nope: 1\n", "nope: unknown key"),
        ("layers:\n  - {name: a, share: -1}\n", "layers[0].share: -1.0 must be >= 0"),
        ("profiles:\n  x:\n    base: missing\n", "profiles.x.base: unknown profile 'missing'"),
        ("profiles:\n  a:\n    base: b\n  b:\n    base: a\n",
         "profiles.a.base: the profiles' bases form a cycle: a -> b -> a"),  # was "unknown profile 'b'"
        ("profiles:\n  c:\n    base: c\n", "profiles.c.base: unknown profile 'c'"),
        ("profiles:\n  x:\n    signals: [{name: relevance, weight: 1}]\n    fusion: avg\n", "profiles.x.fusion: 'avg'"),
    ],
)
def test_errors_name_the_key_and_value(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(text)
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_settings(str(f), env={})


def test_a_misspelled_key_is_told_the_nearest_one_and_a_variable_is_named(tmp_path: Path) -> None:
    """Issue #41: `adress` listed the known keys without a "did you mean"; a variable's error named only its key."""
    f = tmp_path / "c.yaml"
    f.write_text("server:\n  adress: 0.0.0.0:1\n")
    with pytest.raises(ConfigError) as err:
        load_settings(str(f), env={})
    assert str(err.value).startswith("server.adress: unknown key (known: address, ")
    assert str(err.value).endswith("; did you mean 'address'?")
    with pytest.raises(ConfigError, match=r"^server\.workers \(set by MEMRANK_WORKERS\): expected int, got 'abc'$"):
        load_settings(env={"MEMRANK_WORKERS": "abc"})


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
    key, _, what = message.partition(": ")  # the key, and the variable that set it (issue #41)
    with pytest.raises(ConfigError, match=re.escape(f"{key} (set by {var}): {what}")):
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


# ---------------------------------------------------------------- types (pydantic, strict), issue 23 §4


def _load_file(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> Settings:
    f = tmp_path / "c.yaml"
    f.write_text(text)
    return load_settings(str(f), env=env or {})


@pytest.mark.parametrize(("text", "env", "message"), [
    # 400.7 used to become 400 without a word
    ("limits:\n  max_candidates: 400.7\n", {}, "limits.max_candidates: expected a whole number, got 400.7"),
    ("", {"MEMRANK_MAX_CANDIDATES": "400.7"},
     "limits.max_candidates (set by MEMRANK_MAX_CANDIDATES): expected int, got '400.7'"),
    ("server:\n  workers: 1.5\n", {}, "server.workers: expected a whole number, got 1.5"),
    ("limits:\n  max_candidates: .inf\n", {}, "limits.max_candidates: expected a whole number, got inf"),
    ("layers:\n  - {name: a, floor_tokens: 2.5}\n", {}, "layers[0].floor_tokens: expected a whole number, got 2.5"),
])
def test_a_fraction_for_a_whole_number_key_is_refused_naming_the_key(tmp_path: Path, text: str,
                                                                     env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        _load_file(tmp_path, text, env)
    assert str(err.value) == message


def test_a_whole_number_key_takes_a_float_without_a_fraction_from_a_file_and_from_the_environment(
        tmp_path: Path) -> None:
    # As JSON Schema's "integer" (the chart's values.schema.json): 400.0 is 400, in a file and in a variable.
    for s in (_load_file(tmp_path, "limits:\n  max_candidates: 400.0\n"),
              load_settings(env={"MEMRANK_MAX_CANDIDATES": "400.0"})):
        assert s.limits.max_candidates == 400 and type(s.limits.max_candidates) is int
    layer = _load_file(tmp_path, "layers:\n  - {name: a, floor_tokens: 256.0}\n").layers[0]
    assert layer.floor_tokens == 256 and type(layer.floor_tokens) is int


@pytest.mark.parametrize(("text", "message"), [
    ("security:\n  auth_open_methods: null\n", "security.auth_open_methods: expected a string, got null"),  # was
    ("server:\n  address: null\n", "server.address: expected a string, got null"),  # AttributeError / a crash
    ("server:\n  log_level: null\n", "server.log_level: expected a string, got null"),
    ("decision_log:\n  sink: null\n", "decision_log.sink: expected a string, got null"),
])
def test_null_for_a_string_key_is_refused_naming_the_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        _load_file(tmp_path, text)
    assert str(err.value) == message


def test_keys_that_may_be_null_take_null_and_empty(tmp_path: Path) -> None:
    s = _load_file(tmp_path, "security:\n  receipt_key_file: null\n  tls_cert_file: ''\n"
                             "tracing:\n  endpoint: ''\n  sampler_ratio: null\nserver:\n  health_address: ''\n")
    assert (s.security.receipt_key_file, s.security.tls_cert_file) == (None, None)
    assert (s.tracing.endpoint, s.tracing.sampler_ratio, s.server.health_address) == (None, None, None)
    env = load_settings(env={"MEMRANK_HEALTH_ADDRESS": "", "MEMRANK_TRACING_SAMPLER_RATIO": ""})
    assert (env.server.health_address, env.tracing.sampler_ratio) == (None, None)


@pytest.mark.parametrize(("text", "message"), [
    ('server:\n  workers: "2"\n', "server.workers: expected int, got '2'"),
    ("server:\n  workers: true\n", "server.workers: expected int, got True"),
    ('server:\n  grace_period_seconds: "5"\n', "server.grace_period_seconds: expected float, got '5'"),
    ("server:\n  address: 50051\n", "server.address: expected a string, got 50051"),
    ("server:\n  address: true\n", "server.address: expected str, got True"),
    ("tracing:\n  service_name: 123\n", "tracing.service_name: expected a string, got 123"),
    ('decision_log:\n  enabled: "true"\n', "decision_log.enabled: expected true or false, got 'true'"),
    ("decision_log:\n  enabled: 1\n", "decision_log.enabled: expected true or false, got 1"),
    ('layers:\n  - {name: a, share: "0.4"}\n', "layers[0].share: expected float, got '0.4'"),
    ("layers:\n  - {name: 5}\n", "layers[0].name: expected a string, got 5"),
])
def test_a_file_value_has_its_keys_type(tmp_path: Path, text: str, message: str) -> None:
    """Strict, as the chart's values.schema.json: a number is not a string, a string not a number or a bool."""
    with pytest.raises(ConfigError) as err:
        _load_file(tmp_path, text)
    assert str(err.value) == message


def test_an_environment_variable_is_read_as_its_keys_type() -> None:
    s = load_settings(env={"MEMRANK_WORKERS": " 3 ", "MEMRANK_GRACE_PERIOD_SECONDS": "2.5",
                           "MEMRANK_DECISION_LOG_ENABLED": "yes", "MEMRANK_TRACING_ENABLED": "on",
                           "MEMRANK_METRICS_ADDRESS": "127.0.0.9", "MEMRANK_TRACING_SERVICE_NAME": "123"})
    assert (s.server.workers, s.server.grace_period_seconds, s.decision_log.enabled, s.tracing.enabled) == (
        3, 2.5, True, True)
    assert (s.server.metrics_address, s.tracing.service_name) == ("127.0.0.9", "123")
    with pytest.raises(ConfigError, match=r"^decision_log\.enabled \(set by MEMRANK_DECISION_LOG_ENABLED\): "
                                          r"expected true or false, got 'maybe'$"):
        load_settings(env={"MEMRANK_DECISION_LOG_ENABLED": "maybe"})
    with pytest.raises(ConfigError, match=r"^server\.grace_period_seconds \(set by MEMRANK_GRACE_PERIOD_SECONDS\): "
                                          r"expected a finite number, got '1e999'$"):
        load_settings(env={"MEMRANK_GRACE_PERIOD_SECONDS": "1e999"})


def _sample(key: str, default: Any) -> tuple[str, Any]:
    """A valid value of ``key`` other than its default: (the variable's text, the value it reads as)."""
    texts = {"server.address": "127.0.0.1:1", "server.metrics_address": "127.0.0.2", "server.log_level": "debug",
             "server.health_address": "127.0.0.1:2", "decision_log.sink": "file", "decision_log.content": "plain",
             "decision_log.fsync": "every",
             "security.auth_open_methods": "a.B", "tracing.endpoint": "http://x", "tracing.service_name": "svc",
             "shadow.profile": "research", "decision_log.s3_url": "s3://bucket/prefix/",
             "decision_log.s3_endpoint": "http://127.0.0.1:9000"}
    if key in texts:
        return texts[key], texts[key]
    if isinstance(default, bool):
        return "true", True
    if key in BOUNDS:
        lo, hi = BOUNDS[key]
        value = hi if lo == default else lo
        assert value is not None
        return str(value), value
    return f"/run/{key}", f"/run/{key}"  # a file's path


def test_every_environment_variable_sets_its_key() -> None:
    """Every MEMRANK_* spelling keeps working: each variable alone (a TLS pair and a log path given, which some
    need) sets its key and nothing else."""
    base = {"MEMRANK_TLS_CERT_FILE": "/run/cert", "MEMRANK_TLS_KEY_FILE": "/run/key",
            "MEMRANK_DECISION_LOG_PATH": "/run/log"}
    before = load_settings(env=base).as_dict()
    for var, key in ENV_KEYS.items():
        section, name = key.split(".")
        text, value = _sample(key, before[section][name])
        after = load_settings(env={**base, var: text}).as_dict()
        assert after[section][name] == value and value != before[section][name], var
        after[section][name] = before[section][name]
        assert after == before, var


@pytest.mark.parametrize(("text", "message"), [
    # a file's unknown keys first, in the file's order
    ("server:\n  workers: 99\nlimits:\n  bogus: 1\nnope: 1\n", "limits.bogus: unknown key"),
    ("nope: 1\nlimits:\n  bogus: 1\n", "nope: unknown key"),
    # then section by section, in this order: server, limits, security, drift, decision_log, tracing, layers
    ("tracing:\n  sampler_ratio: 2\nserver:\n  workers: 99\n", "server.workers: 99 is outside"),
    # within one: the keys' types, their forms, their bounds, then the checks across keys
    ("server:\n  workers: 99\n  thread_pool_size: x\n", "server.thread_pool_size: expected int, got 'x'"),
    ("server:\n  workers: 99\n  address: nonsense\n", "server.address: expected host:port"),
    ("server:\n  log_level: verbose\n  max_inflight_bytes: 2000\n", "server.max_inflight_bytes: 2000 is below"),
    ("decision_log:\n  queue_size: 0\n  content: redact\n", "decision_log.content: 'redact' is not one of"),
    # server.health_address is checked after the limits
    ("server:\n  health_address: '8081'\nlimits:\n  max_facets: 0\n", "limits.max_facets: 0 must be at least 1"),
    ("server:\n  health_address: '8081'\nsecurity:\n  tls_cert_file: c\n", "server.health_address: expected"),
    # layers item by item: the item's form, its unknown keys, its keys in order
    ("layers:\n  - {name: a, share: -1, zz: 1}\n  - {}\n", "layers[0].zz: unknown layer key"),
    ("layers:\n  - {name: a, share: -1}\n  - {}\n", "layers[0].share: -1.0 must be >= 0"),
])
def test_with_several_errors_the_first_checked_is_reported(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        _load_file(tmp_path, text)
    assert str(err.value).startswith(message), str(err.value)


def test_a_layer_given_by_name_is_the_default_layer_spec(tmp_path: Path) -> None:
    every: dict[str, Any] = {f.name: f.default if f.name != "name" else "b" for f in fields(LayerSpec)}
    s = _load_file(tmp_path, yaml.safe_dump({"layers": [{"name": "a"}, every]}))
    assert s.layers == (LayerSpec("a"), LayerSpec(**every))


def test_the_config_file_in_force_is_decided_once(tmp_path: Path) -> None:
    """--config wins over MEMRANK_CONFIG for the values loaded and for the startup line's origins alike."""
    from_flag, from_env = tmp_path / "flag.yaml", tmp_path / "env.yaml"
    from_flag.write_text("server:\n  workers: 3\n", encoding="utf-8")
    from_env.write_text("server:\n  workers: 5\n", encoding="utf-8")
    env = {"MEMRANK_CONFIG": str(from_env), "MEMRANK_LOG_LEVEL": "debug"}
    assert load_settings(str(from_flag), env=env).server.workers == 3
    assert load_settings(None, env=env).server.workers == 5
    flags = {"server.workers": "--workers"}
    assert SettingsSource(str(from_flag), (("server.workers", 2),)).origins(flags, env) == [
        "built-in defaults", f"file {from_flag} (--config)", "env MEMRANK_LOG_LEVEL", "flags --workers"]
    assert SettingsSource().origins(flags, env)[:2] == ["built-in defaults", f"file {from_env} (MEMRANK_CONFIG)"]
    assert SettingsSource().origins(flags, {}) == ["built-in defaults"]
