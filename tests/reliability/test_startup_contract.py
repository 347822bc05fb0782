"""The startup contract (issue 32, items 7, 9, 11): every configuration error is found before a port opens,
for any worker count, and the process exits once (status 2) with one message naming the key.

Each case runs a real `memrank serve` (see tests.support.servers' ``refused``: it fails the test when the process is
still running after 20 s, which is what a supervisor restarting a failing worker forever looks like).
"""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import pytest

from tests.support.certs import make_certificates
from tests.support.servers import free_port, port_free, refused, start_serve, stop

WORKERS = ["1", "2"]


def _once(out: str, message: str) -> None:
    """Refused before anything served: the message once, no worker, no traceback, nothing about ports."""
    assert out.count(message) == 1, out
    assert [line for line in out.splitlines() if line.startswith("memrank: ")] == [
        next(line for line in out.splitlines() if message in line)], out
    assert "worker starting" not in out and '"serving"' not in out, out
    assert "Traceback" not in out and "in use" not in out, out


def _serve_refused(tmp_path: Path, workers: str, env: dict[str, str] | None = None,
                   *args: str) -> tuple[int, str, int]:
    port = free_port()
    code, out = refused(tmp_path, "--address", f"127.0.0.1:{port}", "--metrics-port", "0", "--workers", workers,
                         *args, env=env)
    return code, out, port


@pytest.mark.parametrize("workers", WORKERS)
def test_a_misspelled_signal_is_refused_at_start_with_the_key_path_and_a_suggestion(
        tmp_path: Path, workers: str) -> None:
    config = tmp_path / "memrank.yaml"
    config.write_text("profiles:\n  mine:\n    base: default\n    signals:\n"
                      "      - {name: relevanse, weight: 1.0, normalization: min_max}\n", encoding="utf-8")
    code, out, port = _serve_refused(tmp_path, workers, None, "--config", str(config))
    assert code == 2, out
    _once(out, "memrank: configuration error: profiles.mine.signals[0].name: 'relevanse' is not a signal")
    assert "did you mean 'relevance'?" in out, out
    assert port_free(port)


@pytest.mark.parametrize(("key", "value", "suggestion"), [
    ("normalization", "min_maks", "min_max"), ("fusion", "rfr", "rrf"), ("formula", "weighted_summ", "weighted_sum")])
def test_other_misspelled_names_in_a_profile_get_a_suggestion(tmp_path: Path, key: str, value: str,
                                                             suggestion: str) -> None:
    config = tmp_path / "memrank.yaml"
    field = (f"    signals:\n      - {{name: relevance, weight: 1.0, {key}: {value}}}\n" if key == "normalization"
             else f"    {key}: {value}\n")
    config.write_text(f"profiles:\n  mine:\n    base: default\n{field}", encoding="utf-8")
    code, out, _ = _serve_refused(tmp_path, "1", None, "--config", str(config))
    assert code == 2 and f"'{value}' is not one of" in out and f"did you mean '{suggestion}'?" in out, out


def _tls_env(tmp_path: Path, case: str) -> tuple[dict[str, str], str]:
    certs = make_certificates(tmp_path)
    if case == "missing cert":
        return ({"MEMRANK_TLS_CERT_FILE": str(tmp_path / "absent.crt"), "MEMRANK_TLS_KEY_FILE": str(certs.server_key)},
                "memrank: configuration error: security.tls_cert_file: cannot read")
    if case == "missing key":
        return ({"MEMRANK_TLS_CERT_FILE": str(certs.server_cert), "MEMRANK_TLS_KEY_FILE": str(tmp_path / "absent.key")},
                "memrank: configuration error: security.tls_key_file: cannot read")
    if case == "key of another certificate":
        return ({"MEMRANK_TLS_CERT_FILE": str(certs.server_cert), "MEMRANK_TLS_KEY_FILE": str(certs.client_key)},
                "memrank: configuration error: security.tls_key_file: "
                f"'{certs.client_key}' is not the private key of security.tls_cert_file")
    if case == "missing token file":
        return ({"MEMRANK_AUTH_TOKEN_FILE": str(tmp_path / "absent-tokens")},
                "memrank: configuration error: security.auth_token_file: cannot read")
    empty = tmp_path / "tokens"
    empty.write_text("# no token yet\n", encoding="utf-8")
    return {"MEMRANK_AUTH_TOKEN_FILE": str(empty)}, "security.auth_token_file: " f"'{empty}' holds no token"


@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize("case", ["missing cert", "missing key", "key of another certificate", "missing token file",
                                  "empty token file"])
def test_a_bad_tls_or_token_file_ends_the_start_once_naming_its_key(tmp_path: Path, case: str,
                                                                     workers: str) -> None:
    env, message = _tls_env(tmp_path, case)
    code, out, port = _serve_refused(tmp_path, workers, env)
    assert code == 2, out
    _once(out, message)
    assert port_free(port)


@pytest.mark.parametrize("workers", WORKERS)
def test_a_metrics_port_equal_to_the_grpc_port_is_refused_naming_both_keys(tmp_path: Path, workers: str) -> None:
    port = free_port()
    code, out = refused(tmp_path, "--address", f"127.0.0.1:{port}", "--metrics-port", str(port),
                         "--workers", workers)
    assert code == 2, out
    _once(out, f"memrank: configuration error: server.metrics_port: port {port} is also the port of "
               f"server.address (127.0.0.1:{port})")


def test_more_workers_than_cpus_run_one_per_cpu_with_a_warning(tmp_path: Path) -> None:
    cpus = len(os.sched_getaffinity(0))
    proc = start_serve(tmp_path, "--address", f"127.0.0.1:{free_port()}", "--metrics-port", "0",
                       "--workers", str(cpus + 1))
    try:
        warning = next(x for x in proc.lines() if "server.workers is above the CPUs" in str(x["msg"]))
        assert warning["level"] == "warning" and warning["workers_asked"] == cpus + 1, warning
        assert warning["cpus"] == cpus and warning["workers"] == cpus, warning
        supervising = [x for x in proc.lines() if x["msg"] == "supervising"]
        assert [x["workers"] for x in supervising] == ([cpus] if cpus > 1 else []), supervising
    finally:
        assert stop(proc) == 0


@pytest.mark.parametrize(("workers", "key", "flag", "env"), [
    ("1", "server.address", "--address", "MEMRANK_ADDRESS"),
    ("2", "server.address", "--address", "MEMRANK_ADDRESS"),
    ("2", "server.metrics_port", "--metrics-port", "MEMRANK_METRICS_PORT")])
def test_a_port_in_use_says_where_to_choose_another(tmp_path: Path, workers: str, key: str, flag: str,
                                                   env: str) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(8)
        taken, other = held.getsockname()[1], free_port()
        grpc_port, metrics_port = (taken, 0) if key == "server.address" else (other, taken)
        code, out = refused(tmp_path, "--address", f"127.0.0.1:{grpc_port}", "--metrics-port", str(metrics_port),
                             "--workers", workers)
    assert code == 2, out
    assert f"memrank: {key} 127.0.0.1:{taken} is in use" in out, out
    assert f"choose another with {flag} or {env} (or {key} in the config file)" in out, out


@pytest.mark.parametrize("workers", WORKERS)
def test_a_drift_reference_that_does_not_load_ends_the_start_once(tmp_path: Path, workers: str) -> None:
    reference = tmp_path / "reference.json"
    reference.write_text("not a reference\n", encoding="utf-8")
    config = tmp_path / "memrank.yaml"
    config.write_text(f"drift:\n  reference_file: {reference}\n", encoding="utf-8")
    code, out, port = _serve_refused(tmp_path, workers, None, "--config", str(config))
    assert code == 2, out
    _once(out, f"memrank: configuration error: drift.reference_file: '{reference}' is not JSON")
    assert port_free(port)


def test_workers_that_keep_dying_at_start_stop_the_supervisor_once(tmp_path: Path) -> None:
    """A start failure no check before the fork foresaw (here: each new worker 0 killed as it starts) is not
    restarted forever: the third death in a row within 10 s of a start stops the supervisor, exit 1."""
    proc = start_serve(tmp_path, "--address", f"127.0.0.1:{free_port()}", "--metrics-port", "0", "--workers", "2")
    killed: list[int] = []
    deadline = time.monotonic() + 60
    try:
        while len(killed) < 3 and time.monotonic() < deadline:
            pids = [int(str(x["pid"])) for x in proc.lines() if x["msg"] == "worker starting" and x["worker"] == 0]
            fresh = [pid for pid in pids if pid not in killed]
            if fresh:
                os.kill(fresh[0], signal.SIGKILL)
                killed.append(fresh[0])
            time.sleep(0.02)
        code = proc.popen.wait(30)
    finally:
        if proc.popen.poll() is None:
            stop(proc)
        proc.handle.close()
    out = proc.log.read_text()
    assert len(killed) == 3 and code == 1, out
    assert out.count("memrank: worker 0 died 3 times in a row within 10 s of its start") == 1, out
    assert [x["msg"] for x in proc.lines() if x["level"] == "error"].count("worker died; restarting") == 2, out
