"""Where settings come from: the packaged defaults, the --config file, the ``MEMRANK_*`` variables, the flags
(pydantic-settings sources over ``ConfigFile``, a config file's data)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any

import yaml
from pydantic import AfterValidator, BeforeValidator, TypeAdapter, ValidationError
from pydantic_settings import BaseSettings, InitSettingsSource, SettingsConfigDict

from memrank.config.keys import fail
from memrank.config.sections import (
    HINTS,
    DecisionLogSettings,
    DriftSettings,
    LayerEntry,
    Limits,
    SecuritySettings,
    ServerSettings,
    ShadowSettings,
    TracingSettings,
    check_decision_log,
    check_drift,
    check_security,
    check_server,
    check_shadow,
    check_tracing,
)
from memrank.core.errors import ConfigError

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
    "MEMRANK_RESPONSE_SEND_TIMEOUT_SECONDS": "server.response_send_timeout_seconds",
    "MEMRANK_MAX_STREAMS_PER_CONNECTION": "server.max_streams_per_connection",
    "MEMRANK_CONFIG_POLL_SECONDS": "server.config_poll_seconds",
    "MEMRANK_MAX_CONNECTION_IDLE_SECONDS": "server.max_connection_idle_seconds",
    "MEMRANK_MAX_CONNECTION_AGE_SECONDS": "server.max_connection_age_seconds",
    "MEMRANK_MAX_CONNECTION_AGE_GRACE_SECONDS": "server.max_connection_age_grace_seconds",
    "MEMRANK_KEEPALIVE_TIME_SECONDS": "server.keepalive_time_seconds",
    "MEMRANK_KEEPALIVE_TIMEOUT_SECONDS": "server.keepalive_timeout_seconds",
    "MEMRANK_MAX_INFLIGHT_BYTES": "server.max_inflight_bytes",
    "MEMRANK_FEATURE_MEMO_BYTES": "server.feature_memo_bytes",
    "MEMRANK_MAX_UNSENT_BYTES_PER_CONNECTION": "server.max_unsent_bytes_per_connection",
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
    "MEMRANK_DECISION_LOG_FSYNC": "decision_log.fsync",
    "MEMRANK_DECISION_LOG_FSYNC_INTERVAL_SECONDS": "decision_log.fsync_interval_seconds",
    "MEMRANK_DECISION_LOG_S3_URL": "decision_log.s3_url",
    "MEMRANK_DECISION_LOG_S3_ENDPOINT": "decision_log.s3_endpoint",
    "MEMRANK_DECISION_LOG_S3_REGION": "decision_log.s3_region",
    "MEMRANK_DECISION_LOG_S3_BATCH_BYTES": "decision_log.s3_batch_bytes",
    "MEMRANK_DECISION_LOG_S3_BATCH_RECORDS": "decision_log.s3_batch_records",
    "MEMRANK_DECISION_LOG_S3_BATCH_SECONDS": "decision_log.s3_batch_seconds",
    "MEMRANK_DECISION_LOG_S3_RETRIES": "decision_log.s3_retries",
    "MEMRANK_DECISION_LOG_S3_BUFFER_BYTES": "decision_log.s3_buffer_bytes",
    "MEMRANK_DECISION_LOG_S3_CLOSE_SECONDS": "decision_log.s3_close_seconds",
    "MEMRANK_TRACING_ENABLED": "tracing.enabled",
    "MEMRANK_TRACING_ENDPOINT": "tracing.endpoint",
    "MEMRANK_TRACING_SAMPLER_RATIO": "tracing.sampler_ratio",
    "MEMRANK_TRACING_SERVICE_NAME": "tracing.service_name",
    "MEMRANK_SHADOW_PROFILE": "shadow.profile",
    "MEMRANK_SHADOW_SAMPLE_RATE": "shadow.sample_rate",
})

def named(item: Any) -> Any:
    if not isinstance(item, Mapping) or not item.get("name"):
        raise fail(f"expected a mapping with a name, got {item!r}")
    return item


def unique_names(layers: list[LayerEntry]) -> list[LayerEntry]:
    if len({layer.name for layer in layers}) != len(layers):
        raise fail("layer names must be unique", "layers")
    return layers


def null_is_no_profiles(raw: Any) -> Any:
    return raw or {}


class ConfigFile(BaseSettings):
    """A config file's data (defaults.yaml's keys) as pydantic-settings merges its sources (load_settings): each
    section's keys validated by its dataclass, then the section's checks across its keys."""

    model_config = SettingsConfigDict(extra="forbid", frozen=True)

    server: Annotated[ServerSettings, AfterValidator(check_server)]
    limits: Limits
    security: Annotated[SecuritySettings, AfterValidator(check_security)]
    drift: Annotated[DriftSettings, AfterValidator(check_drift)]
    decision_log: Annotated[DecisionLogSettings, AfterValidator(check_decision_log)]
    tracing: Annotated[TracingSettings, AfterValidator(check_tracing)]
    shadow: Annotated[ShadowSettings, AfterValidator(check_shadow)]
    layers: Annotated[list[Annotated[LayerEntry, BeforeValidator(named)]], AfterValidator(unique_names)]
    profiles: Annotated[dict[Any, Any], BeforeValidator(null_is_no_profiles)]  # read by profile_from_mapping


# ---------------------------------------------------------------- the sources


def builtin_defaults() -> dict[str, Any]:
    """The packaged defaults.yaml as plain data."""
    text = resources.files("memrank").joinpath("defaults.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    assert isinstance(data, dict)
    return data


def nest(values: Mapping[str, Any]) -> dict[str, Any]:
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
        super().__init__(settings_cls, nest({key: _from_text(HINTS[key], t) for key, t in self.text.items()}))


# ---------------------------------------------------------------- pydantic's errors as memrank's
