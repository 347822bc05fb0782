"""The promotion CronJob and its RBAC, rendered by the real helm: off by default, one ConfigMap reachable,
every manifest valid for its Kubernetes release, bad values refused with the key named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helm import schemas
from tests.support.helm import Doc, Render, run_helm, template_args

ON = {"promotion": {"enabled": True, "logs": ["s3://fleet-logs/decisions/", "s3://fleet-logs/older/"],
                    "profile": "support", "metric": "ndcg@10", "holdout": 0.25,
                    "extraArgs": ["--model", "linear"],
                    "env": [{"name": "AWS_REGION", "value": "eu-west-1"}]}}


def of(docs: list[Doc], kind: str) -> list[Doc]:
    return [d for d in docs if d["kind"] == kind]


def test_off_by_default(render: Render) -> None:
    kinds = {d["kind"] for d in render()}
    assert not kinds & {"CronJob", "Role", "RoleBinding"}


@pytest.mark.parametrize("mode", ["standalone", "sidecar"])
def test_the_job_may_get_and_patch_the_one_configmap_the_pods_mount(render: Render, mode: str) -> None:
    docs = render(ON, {"mode": mode})
    (configmap,) = [d for d in of(docs, "ConfigMap") if "memrank.yaml" in d["data"]]
    (role,) = of(docs, "Role")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["configmaps"],
                              "resourceNames": [configmap["metadata"]["name"]], "verbs": ["get", "patch", "update"]}]
    (binding,) = of(docs, "RoleBinding")
    (account,) = [d for d in of(docs, "ServiceAccount") if d["metadata"]["name"].endswith("-promotion")]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                  "name": role["metadata"]["name"]}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["metadata"]["name"],
                                    "namespace": "agents"}]
    (cron,) = of(docs, "CronJob")
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == account["metadata"]["name"] and pod["automountServiceAccountToken"] is True
    assert account["automountServiceAccountToken"] is False  # only the job's pod mounts the token
    (container,) = pod["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["MEMRANK_PROMOTE_CONFIGMAP"] == f"agents/{configmap['metadata']['name']}"
    assert env["MEMRANK_PROMOTE_PROFILE"] == "support" and env["AWS_REGION"] == "eu-west-1"
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["memrank-config"]["configMap"]["name"] == configmap["metadata"]["name"]
    assert cron["spec"]["concurrencyPolicy"] == "Forbid" and pod["restartPolicy"] == "Never"


def test_the_values_reach_tune_as_arguments(render: Render) -> None:
    (cron,) = of(render(ON), "CronJob")
    (container,) = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    script, name, *args = container["args"]
    assert container["command"] == ["sh", "-c"] and name == "memrank-promotion"
    assert args == ["--log", "s3://fleet-logs/decisions/", "--log", "s3://fleet-logs/older/",
                    "--config", "/etc/memrank/config/memrank.yaml", "--base", "support", "--name", "candidate",
                    "--metric", "ndcg@10", "--holdout", "0.25", "--model", "linear"]
    assert 'memrank tune "$@"' in script and "--require-better" in script
    assert '--profile candidate \\\n  --as "$MEMRANK_PROMOTE_PROFILE" --configmap "$MEMRANK_PROMOTE_CONFIGMAP"' \
        in script
    for value in ("s3://", "support", "ndcg"):
        assert value not in script  # no value is spliced into shell text


def test_the_job_image_defaults_to_the_chart_image(render: Render) -> None:
    def image(values: dict[str, Any]) -> str:
        (cron,) = of(render(ON, values), "CronJob")
        return str(cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["image"])

    assert image({}) == "memrank:0.1.0"
    assert image({"promotion": {"image": {"repository": "reg/memrank-tune", "tag": "7"}}}) == "reg/memrank-tune:7"
    digest = "sha256:" + "a" * 64
    assert image({"promotion": {"image": {"repository": "reg/t", "digest": digest}}}) == f"reg/t@{digest}"


@pytest.mark.parametrize("edge", ["oldest", "newest"])
def test_every_promotion_manifest_validates(render: Render, edge: str) -> None:
    kube = schemas.OLDEST if edge == "oldest" else schemas.newest()
    docs = render(ON, kube=kube)
    assert {"CronJob", "Role", "RoleBinding"} <= {d["kind"] for d in docs}
    for doc in docs:
        schemas.validate(doc, kube)


def test_helm_lint_strict_is_clean_with_promotion(helm: str, chart: Path, tmp_path: Path) -> None:
    args = template_args(chart, tmp_path, [ON], schemas.newest())
    values = [a for a in args if str(a).endswith(".yaml")]
    proc = run_helm(helm, "lint", "--strict", str(chart), "--kube-version", schemas.newest(), "--values", *values)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[WARNING]" not in proc.stdout and "[ERROR]" not in proc.stdout, proc.stdout


@pytest.mark.parametrize(("values", "message"), [
    ({"promotion": {"holdout": 1.5}}, "/promotion/holdout"),
    ({"promotion": {"metric": "precision@5"}}, "/promotion/metric"),
    ({"promotion": {"schedul": "* * * * *"}}, "additional properties 'schedul' not allowed"),
])
def test_bad_promotion_values_fail_the_schema(render_error: Any, values: dict[str, Any], message: str) -> None:
    error = render_error(values)
    assert "values don't meet the specifications of the schema" in error and message in error


def test_inconsistent_promotion_values_fail_the_render(render_error: Any) -> None:
    assert "promotion.logs: give at least one decision log location" in render_error(
        {"promotion": {"enabled": True}})
    assert "needs batch/v1 CronJob (Kubernetes >= 1.21), and the cluster is v1.20.0" in render_error(ON, kube="1.20.0")
