"""Settings: one frozen object, read once (built-in defaults < file < env < flags).

This is the only module that reads the environment. Every error names the
key and the bad value.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from memrank.core.batch import LayerSpec
from memrank.core.errors import ConfigError
from memrank.core.profile import Profile
from memrank.profiles.builtin import BUILTIN_PROFILES
from memrank.profiles.model import profile_from_mapping, profile_to_mapping

# Environment variable -> dotted config key.
ENV_KEYS: Mapping[str, str] = MappingProxyType({
    "MEMRANK_ADDRESS": "server.address",
    "MEMRANK_METRICS_PORT": "server.metrics_port",
    "MEMRANK_METRICS_ADDRESS": "server.metrics_address",
    "MEMRANK_WORKERS": "server.workers",
    "MEMRANK_LOG_LEVEL": "server.log_level",
    "MEMRANK_GRACE_PERIOD_SECONDS": "server.grace_period_seconds",
    "MEMRANK_MAX_MESSAGE_BYTES": "server.max_message_bytes",
    "MEMRANK_MAX_CONCURRENT_RPCS": "server.max_concurrent_rpcs",
    "MEMRANK_THREAD_POOL_SIZE": "server.thread_pool_size",
    "MEMRANK_REQUEST_READ_TIMEOUT_SECONDS": "server.request_read_timeout_seconds",
    "MEMRANK_MAX_STREAMS_PER_CONNECTION": "server.max_streams_per_connection",
    "MEMRANK_MAX_CONNECTION_IDLE_SECONDS": "server.max_connection_idle_seconds",
    "MEMRANK_MAX_CONNECTION_AGE_SECONDS": "server.max_connection_age_seconds",
    "MEMRANK_MAX_CONNECTION_AGE_GRACE_SECONDS": "server.max_connection_age_grace_seconds",
    "MEMRANK_KEEPALIVE_TIME_SECONDS": "server.keepalive_time_seconds",
    "MEMRANK_KEEPALIVE_TIMEOUT_SECONDS": "server.keepalive_timeout_seconds",
    "MEMRANK_MAX_INFLIGHT_BYTES": "server.max_inflight_bytes",
    "MEMRANK_MAX_CANDIDATES": "limits.max_candidates",
    "MEMRANK_PROVENANCE_KEY_FILE": "security.provenance_key_file",
    "MEMRANK_RECEIPT_KEY_FILE": "security.receipt_key_file",
    "MEMRANK_HEALTH_ADDRESS": "server.health_address",
    "MEMRANK_TLS_CERT_FILE": "security.tls_cert_file",
    "MEMRANK_TLS_KEY_FILE": "security.tls_key_file",
    "MEMRANK_TLS_CA_FILE": "security.tls_client_ca_file",
    "MEMRANK_AUTH_TOKEN_FILE": "security.auth_token_file",
    "MEMRANK_AUTH_OPEN_METHODS": "security.auth_open_methods",
    "MEMRANK_DECISION_LOG_ENABLED": "decision_log.enabled",
    "MEMRANK_DECISION_LOG_SINK": "decision_log.sink",
    "MEMRANK_DECISION_LOG_PATH": "decision_log.path",
    "MEMRANK_DECISION_LOG_MAX_BYTES": "decision_log.max_bytes",
    "MEMRANK_DECISION_LOG_BACKUPS": "decision_log.backups",
    "MEMRANK_DECISION_LOG_SAMPLE_RATE": "decision_log.sample_rate",
    "MEMRANK_DECISION_LOG_CONTENT": "decision_log.content",
    "MEMRANK_DECISION_LOG_HASH_KEY_FILE": "decision_log.hash_key_file",
    "MEMRANK_DECISION_LOG_QUEUE_SIZE": "decision_log.queue_size",
    "MEMRANK_TRACING_ENABLED": "tracing.enabled",
    "MEMRANK_TRACING_ENDPOINT": "tracing.endpoint",
    "MEMRANK_TRACING_SAMPLER_RATIO": "tracing.sampler_ratio",
    "MEMRANK_TRACING_SERVICE_NAME": "tracing.service_name",
})
LOG_LEVELS = ("debug", "info", "warning", "error")


@dataclass(frozen=True)
class ServerSettings:
    """How the server listens and behaves."""

    address: str
    metrics_port: int
    metrics_address: str  # "" = the host of ``address`` (see ``metrics_host``)
    workers: int
    log_level: str
    grace_period_seconds: float
    max_message_bytes: int
    max_concurrent_rpcs: int  # RankingService calls whose request has arrived, running or waiting for a thread
    thread_pool_size: int
    health_address: str | None = None  # optional plaintext listener serving only grpc.health.v1 (probes)
    # Bounds on what one client can hold (defaults.yaml gives the values and the reasons).
    request_read_timeout_seconds: float = 10.0  # from the call's start until its request message is in
    max_streams_per_connection: int = 32  # HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS
    max_connection_idle_seconds: float = 300.0  # no call for this long: GOAWAY; 0 = off
    max_connection_age_seconds: float = 1800.0  # any connection: GOAWAY after this long; 0 = off
    max_connection_age_grace_seconds: float = 30.0  # calls in flight at the age limit get this long
    keepalive_time_seconds: float = 60.0  # ping a quiet connection this often...
    keepalive_timeout_seconds: float = 20.0  # ...and close it when the ping is not answered within this
    max_inflight_bytes: int = 0  # request bytes handled at once per worker; 0 = from the memory given (inflight)

    @property
    def metrics_host(self) -> str:
        """The interface /metrics listens on: metrics_address, else the gRPC address's host (brackets off)."""
        if self.metrics_address:
            return self.metrics_address
        return self.address.rpartition(":")[0].strip("[]")


@dataclass(frozen=True)
class Limits:
    """Request size limits enforced at the edge."""

    max_candidates: int
    max_facets: int
    max_content_bytes: int
    max_embedding_dim: int
    max_layers: int
    max_query_bytes: int
    max_id_bytes: int
    max_metadata_entries: int
    max_stage_scores: int
    max_thread_bytes: int
    max_speaker_bytes: int
    max_kind_bytes: int
    max_provenance_bytes: int
    max_metadata_key_bytes: int
    max_metadata_value_bytes: int


@dataclass(frozen=True)
class SecuritySettings:
    """Key, certificate and token files (paths, as Kubernetes Secrets mount them)."""

    provenance_key_file: str | None
    receipt_key_file: str | None
    tls_cert_file: str | None = None  # PEM server certificate chain; with tls_key_file turns TLS on
    tls_key_file: str | None = None  # PEM private key of tls_cert_file
    tls_client_ca_file: str | None = None  # PEM CA bundle: set = mutual TLS, client certificates required
    auth_token_file: str | None = None  # accepted bearer tokens, one per line; set = auth on
    # Comma-separated services ("pkg.Service") or methods ("/pkg.Service/Method") callable without a token.
    auth_open_methods: str = ""


@dataclass(frozen=True)
class DriftSettings:
    """Signal drift: a sliding window of ranked candidates against a reference distribution."""

    window_size: int  # candidates in the sliding window
    reference_size: int  # first candidates after start forming the reference (when no file)
    reference_file: str | None  # a `memrank drift snapshot` file; replaces the first-N reference


DEFAULT_DRIFT = DriftSettings(window_size=5000, reference_size=5000, reference_file=None)

DECISION_SINKS = ("stdout", "file")
DECISION_CONTENT = ("omit", "hash", "plain")


@dataclass(frozen=True)
class DecisionLogSettings:
    """The decision log: which Rank calls are logged, how content is masked, where records go."""

    enabled: bool = False
    sink: str = "stdout"  # "stdout" | "file"
    path: str | None = None  # the file of sink "file"
    max_bytes: int = 100 << 20  # rotate the file before a record would take it past this
    backups: int = 3  # rotated files kept (path.1 newest)
    sample_rate: float = 1.0  # in [0, 1], by a hash of request_id
    content: str = "omit"  # "omit" | "hash" | "plain" (content and query text alike)
    hash_key_file: str | None = None  # the HMAC-SHA256 key of content "hash"
    queue_size: int = 256  # records waiting for the writer; beyond it they are dropped and counted

    def hash_key(self) -> bytes | None:
        """The content HMAC key, read from its file (None when not configured)."""
        return _read_key("decision_log.hash_key_file", self.hash_key_file)


DEFAULT_DECISION_LOG = DecisionLogSettings()


@dataclass(frozen=True)
class TracingSettings:
    """OpenTelemetry tracing (memrank.grpc.tracing). A key left None defers to its standard OTEL_* variable."""

    enabled: bool = False
    endpoint: str | None = None  # OTLP/HTTP traces URL; None: OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, else localhost:4318
    sampler_ratio: float | None = None  # parent-based ratio in [0, 1]; None: OTEL_TRACES_SAMPLER[_ARG], else 1
    service_name: str | None = None  # None: OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES, else "memrank"


DEFAULT_TRACING = TracingSettings()


@dataclass(frozen=True)
class Settings:
    """The whole effective configuration."""

    server: ServerSettings
    limits: Limits
    security: SecuritySettings
    layers: tuple[LayerSpec, ...]
    profiles: Mapping[str, Profile]
    policy_version: str
    drift: DriftSettings = DEFAULT_DRIFT
    decision_log: DecisionLogSettings = DEFAULT_DECISION_LOG
    tracing: TracingSettings = DEFAULT_TRACING

    def provenance_key(self) -> bytes | None:
        """The provenance HMAC key, read from its file (None when not configured)."""
        return _read_key("security.provenance_key_file", self.security.provenance_key_file)

    def receipt_key(self) -> bytes | None:
        """The receipt HMAC key, read from its file (None when not configured)."""
        return _read_key("security.receipt_key_file", self.security.receipt_key_file)

    def as_dict(self) -> dict[str, Any]:
        """The effective configuration as a config file's data: ``load_settings`` of it gives these settings again
        (every profile in full, built-in ones included; the policy version is derived, so not a key)."""
        return {
            "server": asdict(self.server),
            "limits": asdict(self.limits),
            "security": asdict(self.security),
            "drift": asdict(self.drift),
            "decision_log": asdict(self.decision_log),
            "tracing": asdict(self.tracing),
            "layers": [asdict(layer) for layer in self.layers],
            "profiles": {name: profile_to_mapping(p) for name, p in sorted(self.profiles.items())},
        }

    def to_yaml(self) -> str:
        """``--print-config``: ``as_dict`` as YAML, headed by the policy version as a comment."""
        header = f"# memrank effective configuration; policy_version {self.policy_version}\n"
        return header + str(yaml.safe_dump(self.as_dict(), sort_keys=False))


def _read_key(key: str, path: str | None) -> bytes | None:
    if not path:
        return None
    try:
        data = Path(path).read_bytes().strip()
    except OSError as exc:
        raise ConfigError(f"{key}: cannot read {path!r}: {exc.strerror}") from None
    if not data:
        raise ConfigError(f"{key}: {path!r} is empty")
    return data


def builtin_defaults() -> dict[str, Any]:
    """The packaged defaults.yaml as plain data."""
    text = resources.files("memrank").joinpath("defaults.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    assert isinstance(data, dict)
    return data


def _merge(base: dict[str, Any], over: Mapping[str, Any], path: str = "") -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        where = f"{path}{key}"
        if key not in out and path == "" and key not in ("profiles", "layers"):
            raise ConfigError(f"{where}: unknown key (known: {', '.join(sorted(base))})")
        if isinstance(value, Mapping) and isinstance(out.get(key), dict) and key != "profiles":
            for sub in value:
                if sub not in out[key]:
                    raise ConfigError(f"{where}.{sub}: unknown key (known: {', '.join(sorted(out[key]))})")
            out[key] = _merge(out[key], value, f"{where}.")
        else:
            out[key] = copy.deepcopy(value)
    return out


def _set_dotted(data: dict[str, Any], dotted: str, value: Any) -> None:
    head, tail = dotted.split(".", 1)
    data.setdefault(head, {})[tail] = value


def _coerce(key: str, value: Any, kind: type, optional: bool = False) -> Any:
    if value is None and kind is str:
        if optional:
            return None
        raise ConfigError(f"{key}: expected a string, got null")
    if optional and (value is None or value == ""):  # a float | None key: null, or an empty variable
        return None
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.strip().lower() in ("true", "1", "yes")
        raise ConfigError(f"{key}: expected true or false, got {value!r}")
    if isinstance(value, bool):
        raise ConfigError(f"{key}: expected {kind.__name__}, got {value!r}")
    if kind is int and isinstance(value, float) and not value.is_integer():  # int(400.7) would be 400
        raise ConfigError(f"{key}: expected a whole number, got {value!r}")
    try:
        out = kind(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{key}: expected {kind.__name__}, got {value!r}") from None
    if kind is float and not math.isfinite(out):
        raise ConfigError(f"{key}: expected a finite number, got {value!r}")
    return out


def _section(cls: type, key: str, raw: Any) -> Any:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{key}: expected a mapping, got {raw!r}")
    values = {}
    for f in fields(cls):
        kind = {"int": int, "float": float, "str": str, "str | None": str, "bool": bool, "float | None": float}[
            str(f.type)]
        values[f.name] = _coerce(f"{key}.{f.name}", raw.get(f.name), kind, str(f.type).endswith("| None"))
    return cls(**values)


# The numeric bounds of the settings, inclusive, by dotted key (hi None: no upper bound), in the order they are
# checked: the one table the _check_* functions and scripts/gen_chart_schema.py (the chart's values.schema.json)
# read. Written as the error messages print them ([0, 1], not [0.0, 1.0]).
BOUNDS: Mapping[str, tuple[float, float | None]] = MappingProxyType({
    "server.metrics_port": (0, 65535),
    "server.workers": (0, 64),
    "server.grace_period_seconds": (0, 3600),
    "server.max_message_bytes": (1024, 1 << 30),
    "server.max_concurrent_rpcs": (1, 100_000),
    "server.thread_pool_size": (1, 1024),
    "server.request_read_timeout_seconds": (0.1, 3600),
    "server.max_streams_per_connection": (1, 100_000),
    "server.max_connection_idle_seconds": (0, 86_400),
    "server.max_connection_age_seconds": (0, 31_536_000),
    "server.max_connection_age_grace_seconds": (0, 3600),
    "server.keepalive_time_seconds": (0.1, 86_400),
    "server.keepalive_timeout_seconds": (0.1, 3600),
    "server.max_inflight_bytes": (0, 1 << 40),
    **{f"limits.{f.name}": (1, None) for f in fields(Limits)},
    "drift.window_size": (10, 10_000_000),
    "drift.reference_size": (10, 10_000_000),
    "decision_log.sample_rate": (0, 1),
    "decision_log.max_bytes": (1 << 16, 1 << 40),
    "decision_log.backups": (0, 100),
    "decision_log.queue_size": (1, 1_000_000),
    "tracing.sampler_ratio": (0, 1),
    "layers.share": (0, None),  # every item's (_layers)
})
# What security.auth_open_methods entries and tracing.endpoint must match in full (re.fullmatch).
OPEN_METHOD = r"[A-Za-z_][\w.]*|/[A-Za-z_][\w.]*/\w+"
TRACING_ENDPOINT = r"https?://[^\s/]+(/\S*)?"


def _check_bounds(section: str, settings: Any) -> None:
    """BOUNDS of one section's keys, in table order (a None value, "unset", is not checked)."""
    for key, (lo, hi) in BOUNDS.items():
        head, _, name = key.partition(".")
        if head != section or (value := getattr(settings, name)) is None:
            continue
        if hi is None:
            if value < lo:
                raise ConfigError(f"{key}: {value!r} must be at least {lo}")
        elif not lo <= value <= hi:
            raise ConfigError(f"{key}: {value!r} is outside [{lo}, {hi}]")


def _check_server(s: ServerSettings) -> None:
    host, sep, port = s.address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"server.address: expected host:port, got {s.address!r}")
    _check_bounds("server", s)
    if 0 < s.max_inflight_bytes < s.max_message_bytes:
        raise ConfigError(f"server.max_inflight_bytes: {s.max_inflight_bytes} is below server.max_message_bytes "
                          f"({s.max_message_bytes}): a request of the largest size allowed could never run")
    if s.log_level not in LOG_LEVELS:
        raise ConfigError(f"server.log_level: {s.log_level!r} is not one of {', '.join(LOG_LEVELS)}")


def _check_health_address(address: str | None) -> None:
    if address is None:
        return
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"server.health_address: expected host:port, got {address!r}")


def _check_security(sec: SecuritySettings) -> None:
    """Pairs and names; the files themselves are read when the server starts (errors name the key)."""
    if bool(sec.tls_cert_file) != bool(sec.tls_key_file):
        missing = "security.tls_key_file" if sec.tls_cert_file else "security.tls_cert_file"
        raise ConfigError(f"{missing}: required when the other of tls_cert_file/tls_key_file is set")
    if sec.tls_client_ca_file and not sec.tls_cert_file:
        raise ConfigError(f"security.tls_client_ca_file: {sec.tls_client_ca_file!r} needs security.tls_cert_file "
                          "and security.tls_key_file (mutual TLS is TLS first)")
    for entry in (e.strip() for e in sec.auth_open_methods.split(",")):
        if entry and not re.fullmatch(OPEN_METHOD, entry):
            raise ConfigError(f"security.auth_open_methods: {entry!r} is not a service (pkg.Service) or a "
                              "method (/pkg.Service/Method)")


def _check_limits(limits: Limits) -> None:
    _check_bounds("limits", limits)


def _check_drift(d: DriftSettings) -> None:
    _check_bounds("drift", d)
    if d.reference_file is not None and not Path(d.reference_file).is_file():
        raise ConfigError(f"drift.reference_file: {d.reference_file!r} is not a readable file")


def _check_decision_log(d: DecisionLogSettings) -> None:
    """Values and pairs; the key file is read when the server starts (errors name the key)."""
    if d.sink not in DECISION_SINKS:
        raise ConfigError(f"decision_log.sink: {d.sink!r} is not one of {', '.join(DECISION_SINKS)}")
    if d.content not in DECISION_CONTENT:
        raise ConfigError(f"decision_log.content: {d.content!r} is not one of {', '.join(DECISION_CONTENT)}")
    _check_bounds("decision_log", d)
    if d.enabled and d.sink == "file" and not d.path:
        raise ConfigError("decision_log.path: required with decision_log.sink: file")
    if d.enabled and d.content == "hash" and not d.hash_key_file:
        raise ConfigError("decision_log.hash_key_file: required with decision_log.content: hash (an HMAC key, so "
                          "hashes of guessable text cannot be reversed by hashing guesses)")


def _check_tracing(t: TracingSettings) -> None:
    """Values only; the OpenTelemetry packages are looked for when the server starts (memrank.grpc.tracing)."""
    _check_bounds("tracing", t)
    if t.endpoint is not None and not re.fullmatch(TRACING_ENDPOINT, t.endpoint):
        raise ConfigError(f"tracing.endpoint: expected an http:// or https:// URL (OTLP/HTTP, e.g. "
                          f"http://localhost:4318/v1/traces), got {t.endpoint!r}")
    if t.service_name is not None and not t.service_name.strip():
        raise ConfigError(f"tracing.service_name: {t.service_name!r} is blank (null = OTEL_SERVICE_NAME, else "
                          "memrank)")


def _layers(raw: Any) -> tuple[LayerSpec, ...]:
    if not isinstance(raw, list):
        raise ConfigError(f"layers: expected a list, got {raw!r}")
    out: list[LayerSpec] = []
    for i, item in enumerate(raw):
        key = f"layers[{i}]"
        if not isinstance(item, Mapping) or not item.get("name"):
            raise ConfigError(f"{key}: expected a mapping with a name, got {item!r}")
        unknown = set(item) - {"name", "share", "floor_tokens", "max_items", "min_score"}
        if unknown:
            raise ConfigError(f"{key}.{sorted(unknown)[0]}: unknown layer key")
        share = _coerce(f"{key}.share", item.get("share", 0.0), float)
        if share < (lowest := BOUNDS["layers.share"][0]):
            raise ConfigError(f"{key}.share: {share!r} must be >= {lowest}")
        min_score = item.get("min_score")
        out.append(LayerSpec(
            name=str(item["name"]), share=share,
            floor_tokens=_coerce(f"{key}.floor_tokens", item.get("floor_tokens", 0), int),
            max_items=_coerce(f"{key}.max_items", item.get("max_items", 0), int),
            min_score=None if min_score is None else _coerce(f"{key}.min_score", min_score, float),
        ))
    if len({layer.name for layer in out}) != len(out):
        raise ConfigError("layers: layer names must be unique")
    return tuple(out)


def _profiles(raw: Any) -> Mapping[str, Profile]:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"profiles: expected a mapping, got {raw!r}")
    out: dict[str, Profile] = dict(BUILTIN_PROFILES)
    for name, body in raw.items():
        key = f"profiles.{name}"
        if not isinstance(body, Mapping):
            raise ConfigError(f"{key}: expected a mapping, got {body!r}")
        body = dict(body)
        base_name = body.pop("base", None)
        base = out.get(str(base_name)) if base_name else out.get(str(name))
        if base_name and base is None:
            raise ConfigError(f"{key}.base: unknown profile {base_name!r} (known: {', '.join(sorted(out))})")
        out[str(name)] = profile_from_mapping(key, body, base)
    return MappingProxyType(out)


_LAYER_DEFAULTS = {f.name: f.default for f in fields(LayerSpec) if f.name not in ("name", "share")}


def _policy_version(limits: Limits, layers: tuple[LayerSpec, ...], profiles: Mapping[str, Profile]) -> str:
    """A hash of what decides answers (limits, default layers, profiles), however the config spelled it: layer
    keys at their defaults and profiles equal to the built-in ones of their name are left out, as a config file
    that does not mention them (the default configuration hashes as it always has)."""
    data = {
        "limits": asdict(limits),
        "layers": [{k: v for k, v in asdict(layer).items() if _LAYER_DEFAULTS.get(k, object()) != v}
                   for layer in layers],
        "profiles": {name: profile_to_mapping(p) for name, p in sorted(profiles.items())
                     if BUILTIN_PROFILES.get(name) != p},
    }
    canonical = json.dumps(data, sort_keys=True, default=str)
    return "policy-" + hashlib.sha256(canonical.encode()).hexdigest()[:12]


def load_settings(
    path: str | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Load the effective settings: built-in defaults < file < env < overrides (dotted keys)."""
    env = os.environ if env is None else env
    data = builtin_defaults()
    path = path or env.get("MEMRANK_CONFIG") or None
    if path:
        try:
            loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"--config: cannot read {path!r}: {exc.strerror}") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"--config: {path!r} is not valid YAML: {exc}") from None
        if loaded is not None:
            if not isinstance(loaded, Mapping):
                raise ConfigError(f"--config: {path!r} must hold a mapping at the top level")
            data = _merge(data, loaded)
    for var, dotted in ENV_KEYS.items():
        if var in env:
            _set_dotted(data, dotted, env[var])
    for dotted, value in (overrides or {}).items():
        if value is not None:
            _set_dotted(data, dotted, value)
    server = _section(ServerSettings, "server", data["server"])
    _check_server(server)
    limits = _section(Limits, "limits", data["limits"])
    _check_limits(limits)
    _check_health_address(server.health_address)
    security = _section(SecuritySettings, "security", data["security"])
    _check_security(security)
    drift = _section(DriftSettings, "drift", data["drift"])
    _check_drift(drift)
    decision_log = _section(DecisionLogSettings, "decision_log", data["decision_log"])
    _check_decision_log(decision_log)
    tracing = _section(TracingSettings, "tracing", data["tracing"])
    tracing = replace(tracing, endpoint=tracing.endpoint or None, service_name=tracing.service_name or None)
    _check_tracing(tracing)
    layers, profiles = _layers(data["layers"]), _profiles(data.get("profiles") or {})
    return Settings(
        server=server, limits=limits, security=security, layers=layers, profiles=profiles,
        policy_version=_policy_version(limits, layers, profiles), drift=drift, decision_log=decision_log,
        tracing=tracing,
    )


@dataclass(frozen=True)
class SettingsSource:
    """Where settings come from (picklable, so worker processes can load the same settings)."""

    path: str | None = None
    overrides: tuple[tuple[str, Any], ...] = ()

    def load(self) -> Settings:
        """Load the settings this source describes."""
        return load_settings(self.path, overrides=dict(self.overrides))
