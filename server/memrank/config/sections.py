"""The settings' sections as pydantic validates them: each key's type and bounds, then each section's checks
across its keys; ``BOUNDS``, the numeric bounds by dotted key (the chart's values.schema.json reads them)."""

from __future__ import annotations

import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Annotated

from pydantic import AfterValidator, Field

from memrank.config.keys import (
    DECISION_CONTENT,
    DECISION_FSYNC,
    DECISION_SINKS,
    EMPTY_IS_NULL,
    HTTP_URL,
    LOG_LEVELS,
    OPEN_METHOD,
    S3_URL,
    SECTION,
    STRICT,
    TRACING_ENDPOINT,
    Flag,
    Number,
    OptionalText,
    Positive,
    Text,
    Whole,
    fail,
    host_port,
    is_host_port,
    one_of,
    read_key,
)

FEATURE_MEMO_MIN_BYTES = 4096  # server.feature_memo_bytes, when on: room for a few entries (240 bytes each)


@SECTION
@dataclass(frozen=True)
class ServerSettings:
    """How the server listens and behaves."""

    address: Annotated[Text, AfterValidator(host_port)]
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
    # from the handler's answer until the response has left; past it the client's connection is closed
    response_send_timeout_seconds: Annotated[Number, Field(ge=0.1, le=3600)] = 10.0
    max_streams_per_connection: Annotated[Whole, Field(ge=1, le=100_000)] = 32
    max_connection_idle_seconds: Annotated[Number, Field(ge=0, le=86_400)] = 300.0
    max_connection_age_seconds: Annotated[Number, Field(ge=0, le=31_536_000)] = 1800.0
    max_connection_age_grace_seconds: Annotated[Number, Field(ge=0, le=3600)] = 30.0
    keepalive_time_seconds: Annotated[Number, Field(ge=0.1, le=86_400)] = 60.0
    keepalive_timeout_seconds: Annotated[Number, Field(ge=0.1, le=3600)] = 20.0
    # request bytes handled at once per worker; 0 = from the memory given (inflight)
    max_inflight_bytes: Annotated[Whole, Field(ge=0, le=1 << 40)] = 0
    # responses not yet sent one connection may hold before its new calls are refused; 0 = a quarter of the above
    max_unsent_bytes_per_connection: Annotated[Whole, Field(ge=0, le=1 << 40)] = 0
    # how often the config file is checked for changed profiles (0 = only on SIGHUP)
    config_poll_seconds: Annotated[Number, Field(ge=0, le=3600)] = 10.0
    # bytes of the worker's memo of memories' own features (memrank.feature_memo); 0 = off
    feature_memo_bytes: Annotated[Whole, Field(ge=0, le=1 << 40)] = 64 << 20

    @property
    def metrics_host(self) -> str:
        """The interface /metrics listens on: metrics_address, else the gRPC address's host (brackets off)."""
        if self.metrics_address:
            return self.metrics_address
        return self.address.rpartition(":")[0].strip("[]")


@SECTION
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


@SECTION
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


@SECTION
@dataclass(frozen=True)
class DriftSettings:
    """Signal drift: a sliding window of ranked candidates against a reference distribution."""

    window_size: Annotated[Whole, Field(ge=10, le=10_000_000)]  # candidates in the sliding window
    # first candidates after start forming the reference (when no file)
    reference_size: Annotated[Whole, Field(ge=10, le=10_000_000)]
    reference_file: OptionalText  # a `memrank drift snapshot` file; replaces the first-N reference


DEFAULT_DRIFT = DriftSettings(window_size=5000, reference_size=5000, reference_file=None)


@SECTION
@dataclass(frozen=True)
class DecisionLogSettings:
    """The decision log: which Rank calls are logged, how content is masked, where records go."""

    enabled: Flag = False
    sink: Annotated[Text, one_of(DECISION_SINKS)] = "stdout"  # "stdout" | "file" | "s3"
    path: OptionalText = None  # the file of sink "file"
    # rotate the file before a record would take it past this
    max_bytes: Annotated[Whole, Field(ge=1 << 16, le=1 << 40)] = 100 << 20
    backups: Annotated[Whole, Field(ge=0, le=100)] = 3  # rotated files kept (path.1 newest)
    sample_rate: Annotated[Number, Field(ge=0, le=1)] = 1.0  # in [0, 1], by a hash of request_id
    content: Annotated[Text, one_of(DECISION_CONTENT)] = "omit"  # "omit" | "hash" | "plain" (content and query)
    hash_key_file: OptionalText = None  # the HMAC-SHA256 key of content "hash"
    # records waiting for the writer; beyond it they are dropped and counted
    queue_size: Annotated[Whole, Field(ge=1, le=1_000_000)] = 256
    # when written records are fsynced: "never" | "interval" (every fsync_interval_seconds) | "every" record
    fsync: Annotated[Text, one_of(DECISION_FSYNC)] = "interval"
    fsync_interval_seconds: Annotated[Number, Field(ge=0.01, le=3600)] = 1.0
    # sink "s3" (memrank.decisions.s3sink): objects of gzipped JSON lines under s3://bucket/prefix/dt=/hour=/
    s3_url: OptionalText = None  # s3://bucket/prefix/
    s3_endpoint: OptionalText = None  # an S3-compatible server's URL; None: AWS, by region
    s3_region: OptionalText = None  # None: the AWS chain's (AWS_REGION, ~/.aws/config), else us-east-1
    # an object is written once its records reach this many bytes (uncompressed) or records, or its oldest
    # record this age
    s3_batch_bytes: Annotated[Whole, Field(ge=1 << 10, le=1 << 30)] = 8 << 20
    s3_batch_records: Annotated[Whole, Field(ge=1, le=10_000_000)] = 100_000
    s3_batch_seconds: Annotated[Number, Field(ge=0.1, le=3600)] = 60.0
    s3_retries: Annotated[Whole, Field(ge=0, le=100)] = 5  # attempts after a failed upload, backing off
    # records held by the writer (open and unsent objects, uncompressed); beyond it they are dropped and counted
    s3_buffer_bytes: Annotated[Whole, Field(ge=1 << 16, le=1 << 36)] = 64 << 20
    s3_close_seconds: Annotated[Number, Field(ge=0, le=3600)] = 10.0  # at shutdown, to upload what is held

    def hash_key(self) -> bytes | None:
        """The content HMAC key, read from its file (None when not configured)."""
        return read_key("decision_log.hash_key_file", self.hash_key_file)


DEFAULT_DECISION_LOG = DecisionLogSettings()


@SECTION
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


@SECTION
@dataclass(frozen=True)
class ShadowSettings:
    """A candidate profile scored beside the served one on live traffic (``memrank.api.shadow``); reloaded with
    the profiles. The answer never changes: the shadow shows only in metrics and decision records."""

    profile: OptionalText = None  # a configured profile's name; None: no server-side shadow
    sample_rate: Annotated[Number, Field(ge=0, le=1)] = 1.0  # share of calls shadowed, by a hash of request_id


DEFAULT_SHADOW = ShadowSettings()


@SECTION
@dataclass(frozen=True)
class LayerEntry:
    """A default layer as a config file spells it: LayerSpec's fields and defaults, strictly typed."""

    name: Text
    share: Annotated[Number, Field(ge=0)] = 0.0
    floor_tokens: Whole = 0
    max_items: Whole = 0
    min_score: Annotated[float | None, STRICT] = None



SECTIONS: Mapping[str, type] = MappingProxyType({
    "server": ServerSettings, "limits": Limits, "security": SecuritySettings, "drift": DriftSettings,
    "decision_log": DecisionLogSettings, "tracing": TracingSettings, "shadow": ShadowSettings})
KEYED = (*SECTIONS.items(), ("layers", LayerEntry))
# Each key's type without its checks (str | None, ...), as an environment variable's text is read.
HINTS = {f"{prefix}.{name}": hint for prefix, cls in KEYED for name, hint in typing.get_type_hints(cls).items()}


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
    f"{prefix}.{name}": bounds for prefix, cls in KEYED for name, bounds in _field_bounds(cls).items()})


# ---------------------------------------------------------------- checks across the keys of a section


def check_server(s: ServerSettings) -> ServerSettings:
    if 0 < s.max_inflight_bytes < s.max_message_bytes:
        raise fail(f"{s.max_inflight_bytes} is below server.max_message_bytes ({s.max_message_bytes}): a "
                    "request of the largest size allowed could never run", "server.max_inflight_bytes")
    if 0 < s.feature_memo_bytes < FEATURE_MEMO_MIN_BYTES:
        raise fail(f"{s.feature_memo_bytes} is below {FEATURE_MEMO_MIN_BYTES}, too small to hold an entry; 0 turns "
                   "the memo off", "server.feature_memo_bytes")
    if s.log_level not in LOG_LEVELS:
        raise fail(f"{s.log_level!r} is not one of {', '.join(LOG_LEVELS)}", "server.log_level")
    if s.health_address is not None and not is_host_port(s.health_address):  # reported after the limits' errors
        raise fail(f"expected host:port, got {s.health_address!r}", "server.health_address")
    _check_ports_differ(s)
    return s


_WILDCARDS = ("", "0.0.0.0", "::", "*")


def _check_ports_differ(s: ServerSettings) -> None:
    """Two listeners on one port would fail at bind time as "in use" by ourselves: name both keys instead."""
    a_host, _, a_port = s.address.rpartition(":")
    listeners = [("server.address", a_host.strip("[]"), int(a_port))]
    if s.metrics_port:
        listeners.append(("server.metrics_port", s.metrics_host, s.metrics_port))
    if s.health_address is not None:
        h_host, _, h_port = s.health_address.rpartition(":")
        listeners.append(("server.health_address", h_host.strip("[]"), int(h_port)))
    for i, (key, host, port) in enumerate(listeners):
        for other, other_host, other_port in listeners[:i]:
            overlap = host == other_host or host in _WILDCARDS or other_host in _WILDCARDS
            if port and port == other_port and overlap:
                raise fail(f"port {port} is also the port of {other} ({_display(other_host, port)}): "
                           "each listener needs a port of its own", key)


def _display(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def check_security(sec: SecuritySettings) -> SecuritySettings:
    """Pairs and names; the files themselves are read when the server starts (errors name the key)."""
    if bool(sec.tls_cert_file) != bool(sec.tls_key_file):
        missing = "security.tls_key_file" if sec.tls_cert_file else "security.tls_cert_file"
        raise fail("required when the other of tls_cert_file/tls_key_file is set", missing)
    if sec.tls_client_ca_file and not sec.tls_cert_file:
        raise fail(f"{sec.tls_client_ca_file!r} needs security.tls_cert_file and security.tls_key_file (mutual "
                    "TLS is TLS first)", "security.tls_client_ca_file")
    for entry in (e.strip() for e in sec.auth_open_methods.split(",")):
        if entry and not re.fullmatch(OPEN_METHOD, entry):
            raise fail(f"{entry!r} is not a service (pkg.Service) or a method (/pkg.Service/Method)",
                        "security.auth_open_methods")
    return sec


def check_drift(d: DriftSettings) -> DriftSettings:
    if d.reference_file is not None and not Path(d.reference_file).is_file():
        raise fail(f"{d.reference_file!r} is not a readable file", "drift.reference_file")
    return d


def check_decision_log(d: DecisionLogSettings) -> DecisionLogSettings:
    """Pairs; the key file is read when the server starts (errors name the key)."""
    if d.enabled and d.sink == "file" and not d.path:
        raise fail("required with decision_log.sink: file", "decision_log.path")
    check_s3(d)
    if d.enabled and d.content == "hash" and not d.hash_key_file:
        raise fail("required with decision_log.content: hash (an HMAC key, so hashes of guessable text cannot be "
                    "reversed by hashing guesses)", "decision_log.hash_key_file")
    return d


def check_s3(d: DecisionLogSettings) -> None:
    """The keys of sink s3 (their forms whichever the sink, the pairs when it is on); the credentials come
    from the AWS chain when the writer starts."""
    if d.enabled and d.sink == "s3" and not d.s3_url:
        raise fail("required with decision_log.sink: s3 (s3://bucket/prefix/)", "decision_log.s3_url")
    if d.s3_url is not None and not re.fullmatch(S3_URL, d.s3_url):
        raise fail(f"must start with s3:// and name a bucket (s3://bucket/prefix/), got {d.s3_url!r}",
                   "decision_log.s3_url")
    if d.s3_endpoint is not None and not re.fullmatch(HTTP_URL, d.s3_endpoint):
        raise fail(f"expected an http:// or https:// URL, got {d.s3_endpoint!r}", "decision_log.s3_endpoint")
    if d.enabled and d.sink == "s3" and d.s3_buffer_bytes < d.s3_batch_bytes:
        raise fail(f"{d.s3_buffer_bytes} is below decision_log.s3_batch_bytes ({d.s3_batch_bytes}): a full object "
                   "would never fit", "decision_log.s3_buffer_bytes")


def check_tracing(t: TracingSettings) -> TracingSettings:
    """Values only; the OpenTelemetry packages are looked for when the server starts (memrank.grpc.tracing)."""
    if t.endpoint is not None and not re.fullmatch(TRACING_ENDPOINT, t.endpoint):
        raise fail("expected an http:// or https:// URL (OTLP/HTTP, e.g. http://localhost:4318/v1/traces), got "
                    f"{t.endpoint!r}", "tracing.endpoint")
    if t.service_name is not None and not t.service_name.strip():
        raise fail(f"{t.service_name!r} is blank (null = OTEL_SERVICE_NAME, else memrank)", "tracing.service_name")
    return t


def check_shadow(s: ShadowSettings) -> ShadowSettings:
    """Values only; that the profile exists is checked once the profiles are built (``load_settings``)."""
    if s.profile is not None and not s.profile.strip():
        raise fail(f"{s.profile!r} is blank (null = no shadow)", "shadow.profile")
    return s
