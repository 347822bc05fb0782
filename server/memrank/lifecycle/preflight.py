"""Every file the server reads at start, read once by the process that starts, before a port opens or a worker
starts: a bad one ends the start with one message naming its key (exit 2), where a worker failing on it would
be restarted by its supervisor forever."""

from __future__ import annotations

from memrank.config import Settings
from memrank.decisions.sink import check_sink
from memrank.grpc.auth import TokenFile
from memrank.grpc.tls import check_files as check_tls_files
from memrank.grpc.tracing import check_tracing
from memrank.metrics.reference import load_reference


def check_start(settings: Settings) -> None:
    """Raise ConfigError naming the key of the first file (or package) the server could not start with."""
    check_tracing(settings.tracing)
    sec = settings.security
    check_tls_files(sec)
    if sec.auth_token_file:
        TokenFile(sec.auth_token_file)  # unreadable or without a token: ConfigError naming the key
    settings.provenance_key()
    settings.receipt_key()
    if settings.drift.reference_file:
        load_reference(settings.drift.reference_file)  # not JSON, not a reference: ConfigError naming the key
    log = settings.decision_log
    if log.enabled:
        check_sink(log.sink, log.path)  # a sink that cannot be written, before any record is dropped on it
    if log.enabled and log.content == "hash":
        log.hash_key()
