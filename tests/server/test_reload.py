"""Profiles reload without a restart (issue #32, item 12): on SIGHUP and when the config file changes; a bad
file is refused and the old profiles keep serving; calls under load never fail across reloads; responses
name the policy version they were ranked under."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

from memrank.client import RankingClient, RankingError
from tests.support.servers import free_port, start_serve, stop

REQUEST = {"profile": "mine", "query": "tea", "candidates": [
    {"id": "a", "retrievalScore": 0.9, "importance": 0.1, "content": "green tea"},
    {"id": "b", "retrievalScore": 0.3, "importance": 0.9, "content": "a decision about the deploy"}]}


def _config(path: Path, relevance: float, importance: float) -> None:
    """A file whose profile 'mine' weighs relevance and importance as given (written whole, then renamed
    into place as a ConfigMap update does)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"""profiles:
  mine:
    base: default
    relevance_threshold: null
    signals:
      - {{name: relevance, weight: {relevance}, normalization: none}}
      - {{name: importance, weight: {importance}, normalization: none}}
""", encoding="utf-8")
    os.replace(tmp, path)


def _weights(client: RankingClient) -> dict[str, float]:
    profile = next(p for p in client.list_profiles().profiles if p.name == "mine")
    return {w.signal: round(w.weight, 6) for w in profile.weights}


def _until(check: object, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError("not reached within the timeout")


def test_sighup_and_a_changed_file_reload_the_profiles_and_a_bad_file_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "memrank.yaml"
    _config(config, 0.9, 0.1)
    proc = start_serve(tmp_path, "--config", str(config), "--address", "127.0.0.1:0", "--metrics-port", "0",
                       env={"MEMRANK_CONFIG_POLL_SECONDS": "0"})  # the file is read again on SIGHUP only
    try:
        with RankingClient(f"127.0.0.1:{proc.port}", timeout=10) as client:
            first = client.rank(REQUEST)
            assert first.selected[0].id == "a"  # relevance leads
            assert _weights(client) == {"relevance": 0.9, "importance": 0.1}

            _config(config, 0.1, 0.9)  # importance leads now
            time.sleep(0.3)
            assert _weights(client) == {"relevance": 0.9, "importance": 0.1}  # no poll: nothing yet
            proc.popen.send_signal(signal.SIGHUP)
            _until(lambda: _weights(client) == {"relevance": 0.1, "importance": 0.9})
            second = client.rank(REQUEST)
            assert second.selected[0].id == "b"
            assert second.policy_version != first.policy_version

            config.write_text("profiles:\n  mine:\n    base: default\n    signals: [{name: relevanse}]\n",
                              encoding="utf-8")
            proc.popen.send_signal(signal.SIGHUP)
            _until(lambda: any(line["msg"].startswith("reload refused") for line in proc.lines()))
            assert _weights(client) == {"relevance": 0.1, "importance": 0.9}  # the old profiles keep serving
            assert client.rank(REQUEST).policy_version == second.policy_version
    finally:
        assert stop(proc) == 0
    refused = [line for line in proc.lines() if line["msg"].startswith("reload refused")]
    assert "relevanse" in str(refused[0]["error"]) and "did you mean 'relevance'" in str(refused[0]["error"])


def test_a_changed_file_reloads_under_load_with_no_failed_call_and_two_workers(tmp_path: Path) -> None:
    config = tmp_path / "memrank.yaml"
    _config(config, 0.9, 0.1)
    port = free_port()
    proc = start_serve(tmp_path, "--config", str(config), "--address", f"127.0.0.1:{port}", "--metrics-port", "0",
                       "--workers", "2", env={"MEMRANK_CONFIG_POLL_SECONDS": "0.2"})
    failures: list[str] = []
    versions: set[str] = set()
    done = threading.Event()

    def load() -> None:
        with RankingClient(f"127.0.0.1:{port}", timeout=10, retries=0) as c:
            while not done.is_set():
                try:
                    versions.add(c.rank(REQUEST).policy_version)
                except RankingError as exc:
                    failures.append(str(exc))

    callers = [threading.Thread(target=load) for _ in range(4)]
    try:
        for t in callers:
            t.start()
        for k in range(6):  # a reload storm: six changes, each picked up by both workers' watch
            _config(config, 0.9 - 0.1 * k, 0.1 + 0.1 * k)
            time.sleep(0.5)
        with RankingClient(f"127.0.0.1:{port}", timeout=10) as client:
            _until(lambda: _weights(client) == {"relevance": 0.4, "importance": 0.6})
    finally:
        done.set()
        for t in callers:
            t.join()
        assert stop(proc) == 0
    assert failures == []
    assert len(versions) >= 2  # the calls saw the profiles change
    reloaded = [line for line in proc.lines() if line["msg"] == "reloaded"]
    assert {line["pid"] for line in reloaded} == {line["pid"] for line in proc.lines() if line["msg"] == "serving"}
