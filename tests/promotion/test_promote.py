"""`memrank promote`: the tuned weights land in the served config (a file, or a ConfigMap over the Kubernetes
API), every other key stays, a result the server would refuse is never written."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from memrank.config import load_settings
from memrank.profiles.builtin import BUILTIN_PROFILES
from memrank.promotion import PromotionError, merge
from tests.support import configmap_api
from tests.support.certs import make_certificates

DEFAULT = BUILTIN_PROFILES["default"]
TUNED = {s.name: w for s, w in zip(DEFAULT.signals, (0.1, 0.1, 0.05, 0.05, 0.5, 0.05, 0.05, 0.04, 0.03, 0.03),
                                   strict=True)}
SERVED: dict[str, Any] = {
    "limits": {"max_candidates": 500},
    "decision_log": {"enabled": True, "content": "hash", "sink": "stdout"},  # its key file: the pods' env
    "profiles": {
        "support": {"base": "default", "description": "hand-tuned", "min_score": 0.05,
                    "signals": [{"name": s.name, "weight": s.weight, "normalization": s.normalization}
                                for s in DEFAULT.signals]},
        "other": {"base": "default", "description": "left alone"},
    },
}


def tuned_file(folder: Path, base: str = "support") -> Path:
    """A file as `memrank tune --out` writes it (its other profiles copied from --config)."""
    signals = [{"name": s.name, "weight": TUNED[s.name], "normalization": s.normalization} for s in DEFAULT.signals]
    path = folder / "tuned.yaml"
    path.write_text("# memrank tune ...\n" + yaml.safe_dump({"profiles": {
        **SERVED["profiles"], "tuned": {"base": base, "description": "tuned from support", "signals": signals}}},
        sort_keys=False))
    return path


def as_pods_load(path: Path) -> Any:
    """The settings a pod loads from the file: with the decision log's key file its environment names."""
    key = path.parent / "decision-log.key"
    key.write_bytes(b"k" * 32)
    return load_settings(str(path), env={"MEMRANK_DECISION_LOG_HASH_KEY_FILE": str(key)})


def weights(settings_profiles: Any, name: str) -> dict[str, float]:
    return {s.name: s.weight for s in settings_profiles[name].signals}


def _promote(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memrank.cli", "promote", *args], capture_output=True, text=True,
                          timeout=120)


def test_the_serving_profile_gets_the_weights_and_keeps_the_rest(tmp_path: Path) -> None:
    entry = yaml.safe_load(tuned_file(tmp_path).read_text())["profiles"]["tuned"]
    merged = merge(yaml.safe_dump(SERVED), entry, "support", "tuned.yaml")
    doc = yaml.safe_load(merged.text)
    assert doc["limits"] == SERVED["limits"] and doc["decision_log"] == SERVED["decision_log"]
    assert doc["profiles"]["other"] == SERVED["profiles"]["other"]
    support = doc["profiles"]["support"]
    assert (support["base"], support["min_score"], support["description"]) == ("default", 0.05, "tuned from support")
    path = tmp_path / "served.yaml"
    path.write_text(merged.text)
    loaded = as_pods_load(path)  # the server's loader reads the promoted weights
    assert weights(loaded.profiles, "support") == TUNED and loaded.profiles["support"].min_score == 0.05
    assert merged.changed and merged.after == loaded.policy_version != merged.before
    again = merge(merged.text, entry, "support", "tuned.yaml")
    assert not again.changed and again.after == merged.after


def test_a_built_in_serving_profile_is_overridden_without_naming_itself(tmp_path: Path) -> None:
    entry = yaml.safe_load(tuned_file(tmp_path, base="default").read_text())["profiles"]["tuned"]
    merged = merge("", entry, "default", "tuned.yaml")
    body = yaml.safe_load(merged.text)["profiles"]["default"]
    assert "base" not in body  # `base: default` inside `default` would name itself
    path = tmp_path / "served.yaml"
    path.write_text(merged.text)
    loaded = as_pods_load(path).profiles["default"]
    assert weights({"default": loaded}, "default") == TUNED and loaded.diversity_lambda == DEFAULT.diversity_lambda
    candidate = yaml.safe_load(merge("", entry, "candidate", "t").text)["profiles"]["candidate"]
    assert candidate["base"] == "default"  # a new name keeps the base it was tuned on


def test_a_result_the_server_would_refuse_is_not_written(tmp_path: Path) -> None:
    entry = yaml.safe_load(tuned_file(tmp_path).read_text())["profiles"]["tuned"]
    entry["signals"][0]["weight"] = -1.0
    with pytest.raises(PromotionError, match=r"the promoted config does not load: profiles\.support"):
        merge(yaml.safe_dump(SERVED), entry, "support", "t")
    served = tmp_path / "served.yaml"
    served.write_text(yaml.safe_dump(SERVED))
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"profiles": {"tuned": entry}}))
    proc = _promote("--from", str(bad), "--as", "support", "--to-file", str(served))
    assert proc.returncode == 2 and "does not load: profiles.support" in proc.stderr
    assert yaml.safe_load(served.read_text()) == SERVED
    proc = _promote("--from", str(bad), "--profile", "nope", "--as", "support", "--to-file", str(served))
    assert proc.returncode == 2 and f"--from {bad}: no profiles.nope with signals (profiles: tuned)" in proc.stderr


def test_to_file_replaces_the_file_the_server_loads(tmp_path: Path) -> None:
    served = tmp_path / "served.yaml"
    served.write_text(yaml.safe_dump(SERVED))
    proc = _promote("--from", str(tuned_file(tmp_path)), "--as", "support", "--to-file", str(served))
    assert proc.returncode == 0, proc.stderr
    loaded = as_pods_load(served)
    assert weights(loaded.profiles, "support") == TUNED
    assert f"profile 'support' set from {tmp_path / 'tuned.yaml'}, profile tuned; policy " in proc.stdout
    assert proc.stdout.strip().endswith(f"-> {loaded.policy_version} (the servers reload it)")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".served")] == []  # no temporary left
    proc = _promote("--from", str(tmp_path / "tuned.yaml"), "--as", "support", "--to-file", str(served))
    assert proc.returncode == 0 and "already has these weights; nothing written" in proc.stdout


@pytest.fixture
def api(tmp_path: Path) -> Any:
    certs = make_certificates(tmp_path)
    with configmap_api.serving(certs, "s3cr3t") as server:
        server.put("memrank", "memrank", {"memrank.yaml": yaml.safe_dump(SERVED), "untouched": "yes"})
        yield server, certs, configmap_api.write_token(tmp_path, "s3cr3t")


def _to_api(api: Any, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    server, certs, token = api
    return _promote("--from", str(tuned_file(tmp_path)), "--as", "support", "--configmap", "memrank/memrank",
                    "--api-server", server.url, "--token-file", str(token), "--ca-file", str(certs.ca), *extra)


def test_configmap_read_then_conditional_merge_patch(api: Any, tmp_path: Path) -> None:
    server, _, _ = api
    proc = _to_api(api, tmp_path)
    assert proc.returncode == 0, proc.stderr
    get, patch = server.requests
    assert (get["method"], get["path"]) == ("GET", "/api/v1/namespaces/memrank/configmaps/memrank")
    assert (patch["method"], patch["path"]) == ("PATCH", "/api/v1/namespaces/memrank/configmaps/memrank")
    assert patch["headers"]["Content-Type"] == "application/merge-patch+json"
    assert patch["headers"]["Authorization"] == "Bearer s3cr3t"  # the token file's line, without its newline
    assert set(patch["body"]) == {"metadata", "data"} and patch["body"]["metadata"] == {"resourceVersion": "100"}
    assert list(patch["body"]["data"]) == ["memrank.yaml"]  # only the config key is sent
    stored = server.objects[("memrank", "memrank")]
    assert stored["data"]["untouched"] == "yes" and stored["metadata"]["resourceVersion"] == "101"
    path = tmp_path / "from-configmap.yaml"
    path.write_text(stored["data"]["memrank.yaml"])
    assert weights(as_pods_load(path).profiles, "support") == TUNED
    assert "configmap memrank/memrank key memrank.yaml: profile 'support' set from" in proc.stdout


def test_a_change_between_read_and_write_is_kept(api: Any, tmp_path: Path) -> None:
    server, _, _ = api

    def another_writer(s: configmap_api.ConfigMapApi) -> None:
        obj = s.objects[("memrank", "memrank")]
        doc = yaml.safe_load(obj["data"]["memrank.yaml"])
        doc["profiles"]["added-meanwhile"] = {"base": "default"}
        s.put("memrank", "memrank", {**obj["data"], "memrank.yaml": yaml.safe_dump(doc)}, version=200)

    server.after_get = another_writer
    proc = _to_api(api, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [r["method"] for r in server.requests] == ["GET", "PATCH", "GET", "PATCH"]
    assert [r["body"]["metadata"]["resourceVersion"] for r in server.requests if r["method"] == "PATCH"] == [
        "100", "200"]
    doc = yaml.safe_load(server.objects[("memrank", "memrank")]["data"]["memrank.yaml"])
    assert "added-meanwhile" in doc["profiles"] and doc["profiles"]["support"]["description"] == "tuned from support"


def test_api_errors_say_what_to_check(api: Any, tmp_path: Path) -> None:
    server = api[0]
    (tmp_path / "x").mkdir()
    wrong = configmap_api.write_token(tmp_path / "x", "wrong")
    proc = _to_api(api, tmp_path, "--token-file", str(wrong))
    assert proc.returncode == 2
    assert "GET configmap memrank/memrank key memrank.yaml: HTTP 401: Unauthorized (the job's ServiceAccount" \
        in proc.stderr
    proc = _to_api(api, tmp_path, "--configmap", "memrank/absent")
    assert proc.returncode == 2 and "HTTP 404" in proc.stderr and "no such ConfigMap" in proc.stderr
    other_ca = make_certificates(tmp_path / "x").ca
    proc = _to_api(api, tmp_path, "--ca-file", str(other_ca))
    assert proc.returncode == 2 and "CERTIFICATE_VERIFY_FAILED" in proc.stderr
    proc = _to_api(api, tmp_path, "--configmap", "just-a-name")
    assert proc.returncode == 2 and "--configmap 'just-a-name': expected NAMESPACE/NAME" in proc.stderr
    assert all(r["method"] == "GET" for r in server.requests)  # nothing was written


def test_the_patch_is_what_kubectl_applies(tmp_path: Path) -> None:
    """The body the command sends, applied by kubectl's own merge patch to the ConfigMap: only the key changes."""
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl not installed")
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m", "namespace": "n",
                                                               "resourceVersion": "7"},
           "data": {"memrank.yaml": "a: 1\n", "other": "x"}}
    patched = configmap_api.apply(obj, {"metadata": {"resourceVersion": "7"}, "data": {"memrank.yaml": "b: 2\n"}})
    assert patched == json.loads(json.dumps({**obj, "data": {"memrank.yaml": "b: 2\n", "other": "x"}}))
