"""Client-side TLS from PEM files: the channel credentials of the Python clients (no server configuration here, so
importing ``memrank.client`` loads neither ``memrank.config`` nor yaml)."""

from __future__ import annotations

from pathlib import Path

import grpc


def tls_credentials(ca_file: str | None = None, cert_file: str | None = None,
                        key_file: str | None = None) -> grpc.ChannelCredentials:
    """Client credentials: trust ``ca_file`` (None = system roots), present a certificate for mutual TLS."""
    if bool(cert_file) != bool(key_file):
        raise ValueError("cert_file and key_file go together (mutual TLS)")
    return grpc.ssl_channel_credentials(
        root_certificates=Path(ca_file).read_bytes() if ca_file else None,
        private_key=Path(key_file).read_bytes() if key_file else None,
        certificate_chain=Path(cert_file).read_bytes() if cert_file else None,
    )
