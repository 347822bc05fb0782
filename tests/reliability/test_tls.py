"""TLS and mutual TLS from certificate files, as Kubernetes Secrets mount them."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import grpc
import pytest

from memrank.client import RankingClient, RankingError, tls_credentials
from memrank.config import Settings, load_settings
from memrank.core.errors import ConfigError
from memrank.grpc.running import Running
from memrank.grpc.server import create_server
from tests.support.certs import Certificates, make_certificates
from tests.support.servers import loopback_settings

REQUEST = {"query": "tea", "candidates": [{"id": "a", "retrievalScore": 0.4, "importance": 0.5,
                                         "content": "The user prefers green tea."}]}


def _settings(certs: Certificates, mutual: bool, **server: object) -> Settings:
    s = loopback_settings(**server)
    return replace(s, security=replace(s.security, tls_cert_file=str(certs.server_cert),
                                       tls_key_file=str(certs.server_key),
                                       tls_client_ca_file=str(certs.ca) if mutual else None))


@pytest.fixture()
def tls_server(certs: Certificates) -> Iterator[Running]:
    running = create_server(_settings(certs, mutual=False))
    yield running
    running.stop(0)


@pytest.fixture()
def mtls_server(certs: Certificates) -> Iterator[Running]:
    running = create_server(_settings(certs, mutual=True, health_address="127.0.0.1:0"))
    yield running
    running.stop(0)


def test_tls_server_answers_a_client_that_trusts_its_ca(tls_server: Running, certs: Certificates) -> None:
    creds = tls_credentials(str(certs.ca))
    with RankingClient(f"127.0.0.1:{tls_server.port}", credentials=creds, retries=0) as client:
        assert [m.id for m in client.rank(REQUEST).selected] == ["a"]
        assert client.health() == "SERVING"


def test_tls_server_refuses_plaintext_and_untrusted_clients(tls_server: Running, certs: Certificates,
                                                            tmp_path: Path) -> None:
    with RankingClient(f"127.0.0.1:{tls_server.port}", retries=0, timeout=3) as client, \
            pytest.raises(RankingError) as plain:
        client.rank(REQUEST)
    assert plain.value.code == grpc.StatusCode.UNAVAILABLE
    other = make_certificates(tmp_path)  # a client trusting another CA must not accept this server
    with RankingClient(f"127.0.0.1:{tls_server.port}", credentials=tls_credentials(str(other.ca)), retries=0,
                       timeout=3) as client, pytest.raises(RankingError) as untrusted:
        client.rank(REQUEST)
    assert untrusted.value.code == grpc.StatusCode.UNAVAILABLE


def test_mtls_accepts_a_client_certificate_from_the_ca(mtls_server: Running, certs: Certificates) -> None:
    creds = tls_credentials(str(certs.ca), str(certs.client_cert), str(certs.client_key))
    with RankingClient(f"127.0.0.1:{mtls_server.port}", credentials=creds, retries=0) as client:
        assert [m.id for m in client.rank(REQUEST).selected] == ["a"]


@pytest.mark.parametrize("who", ["no certificate", "rogue CA", "plaintext"])
def test_mtls_refuses_a_client_without_a_valid_certificate(mtls_server: Running, certs: Certificates,
                                                           who: str) -> None:
    creds = {"no certificate": tls_credentials(str(certs.ca)),
             "rogue CA": tls_credentials(str(certs.ca), str(certs.rogue_cert), str(certs.rogue_key)),
             "plaintext": None}[who]
    with RankingClient(f"127.0.0.1:{mtls_server.port}", credentials=creds, retries=0, timeout=3) as client, \
            pytest.raises(RankingError) as refused:
        client.rank(REQUEST)
    assert refused.value.code == grpc.StatusCode.UNAVAILABLE


def test_plaintext_health_listener_serves_probes_only(mtls_server: Running) -> None:
    target = f"127.0.0.1:{mtls_server.health_port}"
    with RankingClient(target, retries=0, timeout=3) as client:
        assert client.health() == "SERVING"
        assert client.health("memrank.v1.RankingService") == "SERVING"
        with pytest.raises(RankingError) as ranked:
            client.rank(REQUEST)
    assert ranked.value.code == grpc.StatusCode.UNIMPLEMENTED


def test_rotated_certificate_files_are_picked_up(certs: Certificates, tmp_path: Path) -> None:
    live = tmp_path / "live"
    live.mkdir()
    for name in ("server.crt", "server.key"):
        shutil.copy(certs.server_cert.parent / name, live / name)
    s = loopback_settings()
    s = replace(s, security=replace(s.security, tls_cert_file=str(live / "server.crt"),
                                    tls_key_file=str(live / "server.key")))
    running = create_server(s)
    try:
        (tmp_path / "fresh").mkdir()
        fresh = make_certificates(tmp_path / "fresh")
        for name in ("server.crt", "server.key"):  # Kubernetes swaps a Secret volume's files in place
            shutil.copy(fresh.server_cert.parent / name, live / f".{name}")
            (live / f".{name}").replace(live / name)
        with RankingClient(f"127.0.0.1:{running.port}", credentials=tls_credentials(str(fresh.ca)),
                           retries=0) as client:
            assert client.health() == "SERVING"
    finally:
        running.stop(0)


def test_tls_settings_come_from_the_helm_chart_environment(certs: Certificates) -> None:
    env = {"MEMRANK_TLS_CERT_FILE": str(certs.server_cert), "MEMRANK_TLS_KEY_FILE": str(certs.server_key),
           "MEMRANK_TLS_CA_FILE": str(certs.ca), "MEMRANK_HEALTH_ADDRESS": "0.0.0.0:8081"}
    s = load_settings(env=env)
    assert (s.security.tls_cert_file, s.security.tls_key_file, s.security.tls_client_ca_file) == (
        str(certs.server_cert), str(certs.server_key), str(certs.ca))
    assert s.server.health_address == "0.0.0.0:8081"


@pytest.mark.parametrize(("env", "needle"), [
    ({"MEMRANK_TLS_CERT_FILE": "{cert}"}, "security.tls_key_file: required"),
    ({"MEMRANK_TLS_CA_FILE": "{ca}"}, "security.tls_client_ca_file"),
    ({"MEMRANK_HEALTH_ADDRESS": "8081"},
     r"server\.health_address \(set by MEMRANK_HEALTH_ADDRESS\): expected host:port"),
])
def test_bad_tls_settings_name_the_key(certs: Certificates, env: dict[str, str], needle: str) -> None:
    paths = {"cert": str(certs.server_cert), "key": str(certs.server_key), "ca": str(certs.ca)}
    with pytest.raises(ConfigError, match=needle):
        load_settings(env={k: v.format(**paths) for k, v in env.items()})


def test_a_missing_certificate_file_is_refused_at_start_naming_the_key(certs: Certificates) -> None:
    s = _settings(certs, mutual=False)
    s = replace(s, security=replace(s.security, tls_cert_file="/nonexistent.crt"))
    with pytest.raises(ConfigError, match=r"security.tls_cert_file: cannot read '/nonexistent.crt'"):
        create_server(s)


def test_a_key_file_that_is_not_pem_is_refused_at_start(certs: Certificates, tmp_path: Path) -> None:
    junk = tmp_path / "junk.key"
    junk.write_text("not a key")
    s = _settings(certs, mutual=False)
    s = replace(s, security=replace(s.security, tls_key_file=str(junk)))
    with pytest.raises(ConfigError, match=r"security.tls_key_file: .* holds no PEM block"):
        create_server(s)
