"""Settings: one frozen object, read once (built-in defaults < file < env < flags).

This is the only module that reads the environment. pydantic-settings merges the sources (the packaged
defaults.yaml, the --config file, the MEMRANK_* variables of ENV_KEYS, the flags); pydantic validates the result
against the section dataclasses below: each key's strict type and ``Field`` bounds, then each section's checks
across keys. Every error is one ``ConfigError`` naming the key and the bad value.

Types are strict, as the chart's values.schema.json states them: in a config file a number is not a string, a
string is not a number, and true is neither. A whole-number key takes a float without a fraction, as JSON
Schema's "integer" does (400.0 is 400; 400.7 is refused). An environment variable is text: it is read as its
key's type by pydantic's parsing ("400" and "400.0" are 400; true/false, 1/0, yes/no, on/off) and then checked as
a file's value would be. A key that may be null reads "" as null (what an unset variable or chart value passes).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import typing
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any

import yaml
from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError, with_config
from pydantic_core import ErrorDetails, PydanticCustomError
from pydantic_settings import BaseSettings, InitSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict

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
DECISION_SINKS = ("stdout", "file")
DECISION_CONTENT = ("omit", "hash", "plain")
# What security.auth_open_methods entries and tracing.endpoint must match in full (re.fullmatch).
OPEN_METHOD = r"[A-Za-z_][\w.]*|/[A-Za-z_][\w.]*/\w+"
TRACING_ENDPOINT = r"https?://[^\s/]+(/\S*)?"


# ---------------------------------------------------------------- the keys' types and checks


def _whole_float(value: Any) -> Any:
    """A float without a fraction (YAML's 400.0) is that whole number; 400.7 stays a float, and is refused."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _empty_is_null(value: Any) -> Any:
    return None if value == "" else value


STRICT = Field(strict=True)
EMPTY_IS_NULL = BeforeValidator(_empty_is_null)  # placed after a key's bounds: they apply to the value, not to null
Whole = Annotated[int, BeforeValidator(_whole_float), STRICT]
Number = Annotated[float, STRICT]  # finite: the sections' allow_inf_nan=False
Text = Annotated[str, STRICT]
Flag = Annotated[bool, STRICT]
OptionalText = Annotated[str | None, STRICT, EMPTY_IS_NULL]
Positive = Annotated[Whole, Field(ge=1)]


def _fail(detail: str, key: str = "") -> PydanticCustomError:
    """A check's error: what is wrong with the value of ``key`` (default: the key being validated)."""
    return PydanticCustomError("memrank_config", "{detail}", {"detail": detail, "key": key})


def _is_host_port(address: str) -> bool:
    host, sep, port = address.rpartition(":")
    try:
        return bool(sep and host and port.isdigit() and 0 <= int(port) <= 65535)
    except ValueError:  # a digit int() does not read ("²")
        return False


def _host_port(address: str) -> str:
    if not _is_host_port(address):
        raise _fail(f"expected host:port, got {address!r}")
    return address


def _one_of(choices: tuple[str, ...]) -> AfterValidator:
    def check(value: str) -> str:
        if value not in choices:
            raise _fail(f"{value!r} is not one of {', '.join(choices)}")
        return value

    return AfterValidator(check)


# Validated from a config file's data (load_settings); built directly (tests, replace) they are not checked.
_SECTION = with_config(ConfigDict(extra="forbid", allow_inf_nan=False))


# ---------------------------------------------------------------- the settings


@_SECTION
@dataclass(frozen=True)
class ServerSettings:
    """How the server listens and behaves."""

    address: Annotated[Text, AfterValidator(_host_port)]
    metrics_port: Annotated[Whole, Field(ge=0, le=65535)]
    metrics_address: Text  # "" = the host of ``address`` (see ``metrics_host``)
    workers: Annotated[Whole, Field(ge=0, le=64)]
    log_level: Text  # one of LOG_LEVELS
    grace_period_seconds: Annotated[Number, Field(ge=0, le=3600)]
    max_message_bytes: Annotated[Whole, Field(ge=1024, le=1 << 30)]
    # RankingService calls whose request has arrived, running or waiting for a thread
    max_concurrent_rpcs: Annotated[Whole, Field(ge=1, le=100_000)]
    thread_pool_size: Annotated[Whole, Field(ge=1, le=1024)]
    health_address: OptionalText = None  # optional plaintext listener serving only grpc.health.v1 (probes)
    # Bounds on what one client can hold (defaults.yaml gives the values and the reasons): from the call's start
    # until its request message is in; HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS; no call for this long: GOAWAY (0 =
    # off); any connection: GOAWAY after this long (0 = off), calls in flight then get the grace; ping a quiet
    # connection this often, and close it when the ping is not answered within the timeout.
    request_read_timeout_seconds: Annotated[Number, Field(ge=0.1, le=3600)] = 10.0
    max_streams_per_connection: Annotated[Whole, Field(ge=1, le=100_000)] = 32
    max_connection_idle_seconds: Annotated[Number, Field(ge=0, le=86_400)] = 300.0
    max_connection_age_seconds: Annotated[Number, Field(ge=0, le=31_536_000)] = 1800.0
    max_connection_age_grace_seconds: Annotated[Number, Field(ge=0, le=3600)] = 30.0
    keepalive_time_seconds: Annotated[Number, Field(ge=0.1, le=86_400)] = 60.0
    keepalive_timeout_seconds: Annotated[Number, Field(ge=0.1, le=3600)] = 20.0
    # request bytes handled at once per worker; 0 = from the memory given (inflight)
    max_inflight_bytes: Annotated[Whole, Field(ge=0, le=1 << 40)] = 0

    @property
    def metrics_host(self) -> str:
        """The interface /metrics listens on: metrics_address, else the gRPC address's host (brackets off)."""
        if self.metrics_address:
            return self.metrics_address
        return self.address.rpartition(":")[0].strip("[]")


@_SECTION
@dataclass(frozen=True)
class Limits:
    """Request size limits enforced at the edge."""

    max_candidates: Positive
    max_facets: Positive
    max_content_bytes: Positive
    max_embedding_dim: Positive
    max_layers: Positive
    max_query_bytes: Positive
    max_id_bytes: Positive
    max_metadata_entries: Positive
    max_stage_scores: Positive
    max_thread_bytes: Positive
    max_speaker_bytes: Positive
    max_kind_bytes: Positive
    max_provenance_bytes: Positive
    max_metadata_key_bytes: Positive
    max_metadata_value_bytes: Positive


@_SECTION
@dataclass(frozen=True)
class SecuritySettings:
    """Key, certificate and token files (paths, as Kubernetes Secrets mount them)."""

    provenance_key_file: OptionalText
    receipt_key_file: OptionalText
    tls_cert_file: OptionalText = None  # PEM server certificate chain; with tls_key_file turns TLS on
    tls_key_file: OptionalText = None  # PEM private key of tls_cert_file
    tls_client_ca_file: OptionalText = None  # PEM CA bundle: set = mutual TLS, client certificates required
    auth_token_file: OptionalText = None  # accepted bearer tokens, one per line; set = auth on
    # Comma-separated services ("pkg.Service") or methods ("/pkg.Service/Method") callable without a token.
    auth_open_methods: Text = ""


@_SECTION
@dataclass(frozen=True)
class DriftSettings:
    """Signal drift: a sliding window of ranked candidates against a reference distribution."""

    window_size: Annotated[Whole, Field(ge=10, le=10_000_000)]  # candidates in the sliding window
    # first candidates after start forming the reference (when no file)
    reference_size: Annotated[Whole, Field(ge=10, le=10_000_000)]
    reference_file: OptionalText  # a `memrank drift snapshot` file; replaces the first-N reference


DEFAULT_DRIFT = DriftSettings(window_size=5000, reference_size=5000, reference_file=None)


@_SECTION
@dataclass(frozen=True)
class DecisionLogSettings:
    """The decision log: which Rank calls are logged, how content is masked, where records go."""

    enabled: Flag = False
    sink: Annotated[Text, _one_of(DECISION_SINKS)] = "stdout"  # "stdout" | "file"
    path: OptionalText = None  # the file of sink "file"
    # rotate the file before a record would take it past this
    max_bytes: Annotated[Whole, Field(ge=1 << 16, le=1 << 40)] = 100 << 20
    backups: Annotated[Whole, Field(ge=0, le=100)] = 3  # rotated files kept (path.1 newest)
    sample_rate: Annotated[Number, Field(ge=0, le=1)] = 1.0  # in [0, 1], by a hash of request_id
    content: Annotated[Text, _one_of(DECISION_CONTENT)] = "omit"  # "omit" | "hash" | "plain" (content and query)
    hash_key_file: OptionalText = None  # the HMAC-SHA256 key of content "hash"
    # records waiting for the writer; beyond it they are dropped and counted
    queue_size: Annotated[Whole, Field(ge=1, le=1_000_000)] = 256

    def hash_key(self) -> bytes | None:
        """The content HMAC key, read from its file (None when not configured)."""
        return _read_key("decision_log.hash_key_file", self.hash_key_file)


DEFAULT_DECISION_LOG = DecisionLogSettings()


@_SECTION
@dataclass(frozen=True)
class TracingSettings:
    """OpenTelemetry tracing (memrank.grpc.tracing). A key left None defers to its standard OTEL_* variable."""

    enabled: Flag = False
    # OTLP/HTTP traces URL; None: OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, else localhost:4318
    endpoint: OptionalText = None
    # parent-based ratio in [0, 1]; None: OTEL_TRACES_SAMPLER[_ARG], else 1
    sampler_ratio: Annotated[float | None, Field(strict=True, ge=0, le=1), EMPTY_IS_NULL] = None
    service_name: OptionalText = None  # None: OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES, else "memrank"


DEFAULT_TRACING = TracingSettings()


@_SECTION
@dataclass(frozen=True)
class _Layer:
    """A default layer as a config file spells it: LayerSpec's fields and defaults, strictly typed."""

    name: Text
    share: Annotated[Number, Field(ge=0)] = 0.0
    floor_tokens: Whole = 0
    max_items: Whole = 0
    min_score: Annotated[float | None, STRICT] = None


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


_SECTIONS: Mapping[str, type] = MappingProxyType({
    "server": ServerSettings, "limits": Limits, "security": SecuritySettings, "drift": DriftSettings,
    "decision_log": DecisionLogSettings, "tracing": TracingSettings})
_KEYED = (*_SECTIONS.items(), ("layers", _Layer))
# Each key's type without its checks (str | None, ...), as an environment variable's text is read.
_HINTS = {f"{prefix}.{name}": hint for prefix, cls in _KEYED for name, hint in typing.get_type_hints(cls).items()}


def _field_bounds(cls: type) -> dict[str, tuple[float, float | None]]:
    out: dict[str, tuple[float, float | None]] = {}
    for name, hint in typing.get_type_hints(cls, include_extras=True).items():
        lo = hi = None
        for constraint in (c for meta in getattr(hint, "__metadata__", ()) for c in getattr(meta, "metadata", ())):
            lo, hi = getattr(constraint, "ge", lo), getattr(constraint, "le", hi)
        if lo is not None:
            out[name] = (lo, hi)
    return out


# The numeric bounds of the settings, inclusive, by dotted key (hi None: no upper bound), in the order they are
# checked: the sections' Field(ge=, le=), the one table scripts/gen_chart_schema.py (the chart's
# values.schema.json) reads. Written as the error messages print them ([0, 1], not [0.0, 1.0]).
BOUNDS: Mapping[str, tuple[float, float | None]] = MappingProxyType({
    f"{prefix}.{name}": bounds for prefix, cls in _KEYED for name, bounds in _field_bounds(cls).items()})


# ---------------------------------------------------------------- checks across the keys of a section


def _check_server(s: ServerSettings) -> ServerSettings:
    if 0 < s.max_inflight_bytes < s.max_message_bytes:
        raise _fail(f"{s.max_inflight_bytes} is below server.max_message_bytes ({s.max_message_bytes}): a "
                    "request of the largest size allowed could never run", "server.max_inflight_bytes")
    if s.log_level not in LOG_LEVELS:
        raise _fail(f"{s.log_level!r} is not one of {', '.join(LOG_LEVELS)}", "server.log_level")
    if s.health_address is not None and not _is_host_port(s.health_address):  # reported after the limits' errors
        raise _fail(f"expected host:port, got {s.health_address!r}", "server.health_address")
    return s


def _check_security(sec: SecuritySettings) -> SecuritySettings:
    """Pairs and names; the files themselves are read when the server starts (errors name the key)."""
    if bool(sec.tls_cert_file) != bool(sec.tls_key_file):
        missing = "security.tls_key_file" if sec.tls_cert_file else "security.tls_cert_file"
        raise _fail("required when the other of tls_cert_file/tls_key_file is set", missing)
    if sec.tls_client_ca_file and not sec.tls_cert_file:
        raise _fail(f"{sec.tls_client_ca_file!r} needs security.tls_cert_file and security.tls_key_file (mutual "
                    "TLS is TLS first)", "security.tls_client_ca_file")
    for entry in (e.strip() for e in sec.auth_open_methods.split(",")):
        if entry and not re.fullmatch(OPEN_METHOD, entry):
            raise _fail(f"{entry!r} is not a service (pkg.Service) or a method (/pkg.Service/Method)",
                        "security.auth_open_methods")
    return sec


def _check_drift(d: DriftSettings) -> DriftSettings:
    if d.reference_file is not None and not Path(d.reference_file).is_file():
        raise _fail(f"{d.reference_file!r} is not a readable file", "drift.reference_file")
    return d


def _check_decision_log(d: DecisionLogSettings) -> DecisionLogSettings:
    """Pairs; the key file is read when the server starts (errors name the key)."""
    if d.enabled and d.sink == "file" and not d.path:
        raise _fail("required with decision_log.sink: file", "decision_log.path")
    if d.enabled and d.content == "hash" and not d.hash_key_file:
        raise _fail("required with decision_log.content: hash (an HMAC key, so hashes of guessable text cannot be "
                    "reversed by hashing guesses)", "decision_log.hash_key_file")
    return d


def _check_tracing(t: TracingSettings) -> TracingSettings:
    """Values only; the OpenTelemetry packages are looked for when the server starts (memrank.grpc.tracing)."""
    if t.endpoint is not None and not re.fullmatch(TRACING_ENDPOINT, t.endpoint):
        raise _fail("expected an http:// or https:// URL (OTLP/HTTP, e.g. http://localhost:4318/v1/traces), got "
                    f"{t.endpoint!r}", "tracing.endpoint")
    if t.service_name is not None and not t.service_name.strip():
        raise _fail(f"{t.service_name!r} is blank (null = OTEL_SERVICE_NAME, else memrank)", "tracing.service_name")
    return t


def _named(item: Any) -> Any:
    if not isinstance(item, Mapping) or not item.get("name"):
        raise _fail(f"expected a mapping with a name, got {item!r}")
    return item


def _unique_names(layers: list[_Layer]) -> list[_Layer]:
    if len({layer.name for layer in layers}) != len(layers):
        raise _fail("layer names must be unique", "layers")
    return layers


def _null_is_no_profiles(raw: Any) -> Any:
    return raw or {}


class ConfigFile(BaseSettings):
    """A config file's data (defaults.yaml's keys) as pydantic-settings merges its sources (load_settings): each
    section's keys validated by its dataclass, then the section's checks across its keys."""

    model_config = SettingsConfigDict(extra="forbid", frozen=True)

    server: Annotated[ServerSettings, AfterValidator(_check_server)]
    limits: Limits
    security: Annotated[SecuritySettings, AfterValidator(_check_security)]
    drift: Annotated[DriftSettings, AfterValidator(_check_drift)]
    decision_log: Annotated[DecisionLogSettings, AfterValidator(_check_decision_log)]
    tracing: Annotated[TracingSettings, AfterValidator(_check_tracing)]
    layers: Annotated[list[Annotated[_Layer, BeforeValidator(_named)]], AfterValidator(_unique_names)]
    profiles: Annotated[dict[Any, Any], BeforeValidator(_null_is_no_profiles)]  # read by profile_from_mapping


# ---------------------------------------------------------------- the sources


def builtin_defaults() -> dict[str, Any]:
    """The packaged defaults.yaml as plain data."""
    text = resources.files("memrank").joinpath("defaults.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    assert isinstance(data, dict)
    return data


def _nest(values: Mapping[str, Any]) -> dict[str, Any]:
    """Dotted keys as a config file's data: {"server.workers": 2} is {"server": {"workers": 2}}."""
    out: dict[str, Any] = {}
    for dotted, value in values.items():
        head, tail = dotted.split(".", 1)
        out.setdefault(head, {})[tail] = value
    return out


class FileSource(InitSettingsSource):
    """The YAML file of --config (or MEMRANK_CONFIG); ``data`` keeps its keys in the file's order."""

    def __init__(self, settings_cls: type[BaseSettings], path: str | None) -> None:
        self.data: Mapping[str, Any] = {}
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
                # a key that is not a string (YAML's 1: or true:) is an unknown key, named as its text
                self.data = {key if isinstance(key, str) else str(key): value for key, value in loaded.items()}
        super().__init__(settings_cls, dict(self.data))


@functools.cache
def _text_reader(hint: Any) -> TypeAdapter[Any]:
    return TypeAdapter(hint)


def _from_text(hint: Any, text: str) -> Any:
    try:
        return _text_reader(hint).validate_python(text)
    except ValidationError:
        return text  # refused by the key's validation, naming the key


class EnvSource(InitSettingsSource):
    """The variables of ENV_KEYS in ``env``, each read as its key's type (pydantic's parsing of text, as
    pydantic-settings' own env source does for a strict model); ``text`` keeps what they said."""

    def __init__(self, settings_cls: type[BaseSettings], env: Mapping[str, str]) -> None:
        self.text = {key: env[var] for var, key in ENV_KEYS.items() if var in env}
        super().__init__(settings_cls, _nest({key: _from_text(_HINTS[key], t) for key, t in self.text.items()}))


# ---------------------------------------------------------------- pydantic's errors as memrank's


_CHECK = "memrank_config"  # _fail's
_UNKNOWN = ("extra_forbidden", "unexpected_keyword_argument", "invalid_key")  # invalid_key: not a string
_BOUND = ("greater_than_equal", "less_than_equal")
_EXPECTED = {"int_type": "int", "float_type": "float", "finite_number": "a finite number", "bool_type": "true or false",
             "string_type": "a string", "dataclass_type": "a mapping", "dict_type": "a mapping", "list_type": "a list"}
# The sections in the order their errors are reported; server.health_address's check comes after the limits.
_ORDER = ("server", "limits", "server.health_address", "security", "drift", "decision_log", "tracing", "layers",
          "profiles")
_LAST = 1 << 30


def _index(items: Any, item: Any) -> int:
    items = list(items) if isinstance(items, Mapping | list | tuple) else []
    return items.index(item) if item in items else _LAST


def _rank(err: ErrorDetails, key: str, file: Mapping[str, Any]) -> tuple[int, int, int, int, int, str]:
    """Where the error stands in the order memrank checks in (the first one found is reported): a file's unknown
    keys, in the file's order; then section by section: the section's form, its keys' types (in key order), their
    forms, their bounds, the section's checks across keys; layers item by item (form, unknown keys, each key)."""
    loc, kind = err["loc"], err["type"]
    head = str(loc[0]) if loc else ""
    if kind in _UNKNOWN and head != "layers":
        return 0, _index(file, head), _index(file.get(head), loc[1]) if len(loc) > 1 else -1, 0, 0, ""
    section = _index(_ORDER, key if kind == _CHECK and key in _ORDER else head)
    if head == "layers" and len(loc) > 1:
        name = str(loc[2]) if len(loc) > 2 else ""
        step = -2 if not name else -1 if kind in _UNKNOWN else 2 * _index(_HINTS, f"layers.{name}") + (kind in _BOUND)
        return 1, section, 1, int(loc[1]), step, name if kind in _UNKNOWN else ""
    if len(loc) == 1:
        return 1, section, 9 if kind == _CHECK else 0, 0, 0, ""
    if kind in _BOUND:
        return 1, section, 3, _index(BOUNDS, key), 0, ""
    return 1, section, 2 if kind == _CHECK else 1, _index(_HINTS, key), 0, ""


def _message(err: ErrorDetails, key: str, written: Mapping[str, str]) -> str:
    kind, value = err["type"], err["input"]
    if kind == _CHECK:
        return f"{key}: {err.get('ctx', {})['detail']}"
    if kind in _UNKNOWN:
        if key.startswith("layers["):
            return f"{key}: unknown layer key"
        section = _SECTIONS.get(key.rpartition(".")[0])
        known = [f.name for f in fields(section)] if section else list(ConfigFile.model_fields)
        return f"{key}: unknown key (known: {', '.join(sorted(known))})"
    if kind in _BOUND:
        bound_key = re.sub(r"\[\d+\]", "", key)
        lo, hi = BOUNDS[bound_key]
        hint = _HINTS[bound_key]
        number = float(value) if hint is float or float in typing.get_args(hint) else int(value)  # as checked
        if hi is not None:
            return f"{key}: {number!r} is outside [{lo}, {hi}]"
        return f"{key}: {number!r} {'must be >=' if bound_key == 'layers.share' else 'must be at least'} {lo}"
    if kind == "int_type" and isinstance(value, float):
        return f"{key}: expected a whole number, got {value!r}"
    if kind not in _EXPECTED:
        return f"{key}: {err['msg']}"
    expected = "str" if kind == "string_type" and isinstance(value, bool) else _EXPECTED[kind]
    shown = "null" if value is None and kind == "string_type" else repr(written.get(key, value))
    return f"{key}: expected {expected}, got {shown}"


def _config_error(exc: ValidationError, file: Mapping[str, Any], written: Mapping[str, str]) -> ConfigError:
    """The ConfigError of the error found first (``_rank``); ``written``: variables' text, shown for their keys."""
    found = []
    for err in exc.errors():
        *parents, last = err["loc"] or ("config",)
        loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parents).lstrip(".")
        loc += f"[{last}]" if isinstance(last, int) and err["type"] != "invalid_key" else f".{last}"
        key = str(err.get("ctx", {}).get("key") or loc.lstrip("."))
        found.append((_rank(err, key, file), _message(err, key, written)))
    return ConfigError(min(found)[1])


# ---------------------------------------------------------------- profiles, the policy version, loading


def _profiles(raw: Mapping[Any, Any]) -> Mapping[str, Profile]:
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
    file = FileSource(ConfigFile, path or env.get("MEMRANK_CONFIG") or None)
    variables = EnvSource(ConfigFile, env)
    flags = {dotted: value for dotted, value in (overrides or {}).items() if value is not None}
    sources: tuple[PydanticBaseSettingsSource, ...] = (  # the first one's keys win
        InitSettingsSource(ConfigFile, _nest(flags)), variables, file,
        InitSettingsSource(ConfigFile, builtin_defaults()),
    )
    try:
        # mypy sees the fields' __init__ (pydantic's dataclass_transform), not BaseSettings' own
        config = ConfigFile(_build_sources=(sources, {}))  # type: ignore[call-arg]
    except ValidationError as exc:
        raise _config_error(exc, file.data, {k: t for k, t in variables.text.items() if k not in flags}) from None
    layers = tuple(LayerSpec(**asdict(layer)) for layer in config.layers)
    profiles = _profiles(config.profiles)
    return Settings(
        server=config.server, limits=config.limits, security=config.security, layers=layers, profiles=profiles,
        policy_version=_policy_version(config.limits, layers, profiles), drift=config.drift,
        decision_log=config.decision_log, tracing=config.tracing,
    )


@dataclass(frozen=True)
class SettingsSource:
    """Where settings come from (picklable, so worker processes can load the same settings)."""

    path: str | None = None
    overrides: tuple[tuple[str, Any], ...] = ()

    def load(self) -> Settings:
        """Load the settings this source describes."""
        return load_settings(self.path, overrides=dict(self.overrides))
