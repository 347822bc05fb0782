"""TLS and mutual TLS from PEM files (as Kubernetes Secrets mount them), reloaded when they change.

The server side; the clients' credentials are ``memrank.client.tls.tls_credentials``.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
from pathlib import Path

import grpc

from memrank.config import SecuritySettings
from memrank.core.errors import ConfigError

log = logging.getLogger("memrank.tls")


def _read(key: str, path: str) -> bytes:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{key}: cannot read {path!r}: {exc.strerror}") from None
    if b"-----BEGIN" not in data:
        raise ConfigError(f"{key}: {path!r} holds no PEM block")
    return data


def _stamp(paths: tuple[str, ...]) -> tuple[tuple[int, int, int], ...]:
    """What changes when a file is replaced, including Kubernetes' symlink swap of a Secret volume."""
    out = []
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            out.append((0, 0, 0))
        else:
            out.append((st.st_ino, st.st_mtime_ns, st.st_size))
    return tuple(out)


class _CertificateFiles:
    """The server's certificate configuration, re-read on the next handshake after a file changes."""

    def __init__(self, sec: SecuritySettings) -> None:
        assert sec.tls_cert_file and sec.tls_key_file
        self._sec = sec
        self._paths = tuple(p for p in (sec.tls_cert_file, sec.tls_key_file, sec.tls_client_ca_file) if p)
        self._lock = threading.Lock()
        self._seen = _stamp(self._paths)
        self.initial = self._load()

    def _load(self) -> grpc.ServerCertificateConfiguration:
        sec = self._sec
        assert sec.tls_cert_file and sec.tls_key_file
        pair = (_read("security.tls_key_file", sec.tls_key_file), _read("security.tls_cert_file", sec.tls_cert_file))
        ca = _read("security.tls_client_ca_file", sec.tls_client_ca_file) if sec.tls_client_ca_file else None
        return grpc.ssl_server_certificate_configuration([pair], root_certificates=ca)

    def fetch(self) -> grpc.ServerCertificateConfiguration | None:
        """A new configuration when a file changed since the last call, else None (keep the current one)."""
        with self._lock:
            now = _stamp(self._paths)
            if now == self._seen:
                return None
            try:
                config = self._load()
            except ConfigError as exc:  # mid-rotation: keep serving with the last good certificate
                log.warning("tls files changed but cannot be loaded; keeping the previous ones",
                            extra={"error": str(exc)})
                return None
            self._seen = now
            log.info("tls certificate files reloaded")
            return config


def _encrypted() -> bytes:
    raise ConfigError("security.tls_key_file: the key is encrypted (grpc needs an unencrypted PEM key)")


def _certificates(key: str, path: str) -> None:
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_verify_locations(cafile=path)
    except ssl.SSLError as exc:
        raise ConfigError(f"{key}: {path!r} holds no readable PEM certificate ({exc.reason or exc})") from None


def check_files(sec: SecuritySettings) -> None:
    """Read the TLS files as the listener will, and check that the key is the certificate's: a ConfigError naming
    the key, before any port opens (grpc would only say that the port cannot be added)."""
    if not (sec.tls_cert_file and sec.tls_key_file):
        return
    _read("security.tls_cert_file", sec.tls_cert_file)
    _read("security.tls_key_file", sec.tls_key_file)
    _certificates("security.tls_cert_file", sec.tls_cert_file)
    if sec.tls_client_ca_file:
        _read("security.tls_client_ca_file", sec.tls_client_ca_file)
        _certificates("security.tls_client_ca_file", sec.tls_client_ca_file)
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(sec.tls_cert_file, sec.tls_key_file, _encrypted)
    except ssl.SSLError as exc:
        if exc.reason == "KEY_VALUES_MISMATCH":
            raise ConfigError(f"security.tls_key_file: {sec.tls_key_file!r} is not the private key of "
                              f"security.tls_cert_file {sec.tls_cert_file!r} (the pair does not match)") from None
        raise ConfigError(f"security.tls_key_file: {sec.tls_key_file!r} holds no readable PEM private key "
                          f"({exc.reason or exc})") from None


def server_credentials(sec: SecuritySettings) -> grpc.ServerCredentials | None:
    """TLS credentials for the listener (client certificates required when a client CA is set), or None."""
    if not sec.tls_cert_file:
        return None
    files = _CertificateFiles(sec)
    return grpc.dynamic_ssl_server_credentials(
        files.initial, files.fetch, require_client_authentication=bool(sec.tls_client_ca_file)
    )
