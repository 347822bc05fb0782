"""The chart rendered by the real helm: lint, schemas, and the behaviour the values promise."""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from memrank.config import ENV_KEYS, load_settings
from tests.helm import schemas
from tests.support.helm import CHART, CI_VALUES, DASHBOARD, RULES, Doc, Render, missing, run_helm

CRDS = ("monitoring.coreos.com/v1",)
CI_NAMES = [p.name for p in CI_VALUES]


def ci(name: str) -> Path:
    return CHART / "ci" / f"{name}-values.yaml"


def kinds(docs: list[Doc]) -> list[str]:
    return [d["kind"] for d in docs]


def one(docs: list[Doc], kind: str, name: str | None = None) -> Doc:
    found = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, got {len(found)}"
    return found[0]


def pod_specs(docs: list[Doc]) -> list[dict[str, Any]]:
    return [d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"]


def memrank_containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    every = spec.get("initContainers", []) + spec["containers"]
    return [c for c in every if any(p["name"] == "memrank-grpc" for p in c.get("ports", []))]


def env_of(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container.get("env", [])}


# ---------------------------------------------------------------- lint and schemas


def test_ci_values_cover_the_four_shapes() -> None:
    expected = [f"{n}-values.yaml" for n in ("monitoring-all-on", "sidecar", "standalone", "tls-on")]
    assert expected == CI_NAMES


@pytest.mark.parametrize("values", [None, *CI_NAMES])
def test_helm_lint_strict_is_clean(helm: str, chart: Path, values: str | None) -> None:
    args = ["lint", "--strict", str(chart), "--kube-version", schemas.newest()]
    if values:
        args += ["--values", str(CHART / "ci" / values)]
    proc = run_helm(helm, *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[WARNING]" not in proc.stdout and "[ERROR]" not in proc.stdout, proc.stdout


def test_validated_releases_are_shipped() -> None:
    versions = schemas.shipped_versions()
    assert schemas.OLDEST in versions
    assert yaml.safe_load((CHART / "Chart.yaml").read_text())["kubeVersion"] == f">={schemas.FLOOR}-0"


@pytest.mark.parametrize("edge", ["oldest", "newest"])
@pytest.mark.parametrize("values", [None, *CI_NAMES])
def test_every_manifest_validates_against_its_schema(render: Render, values: str | None, edge: str) -> None:
    kube = schemas.OLDEST if edge == "oldest" else schemas.newest()
    docs = render(*([CHART / "ci" / values] if values else []), kube=kube, api_versions=CRDS)
    assert docs
    for doc in docs:
        schemas.validate(doc, kube)


def test_monitoring_validator_rejects_unknown_fields_and_bad_patterns(render: Render) -> None:
    monitor = one(render(ci("monitoring-all-on"), api_versions=CRDS), "ServiceMonitor")
    with_typo = json.loads(json.dumps(monitor))
    with_typo["spec"]["endpoints"][0]["intervall"] = "30s"
    with pytest.raises(ValueError, match="intervall"):
        schemas.validate_monitoring(with_typo)
    bad_interval = json.loads(json.dumps(monitor))
    bad_interval["spec"]["endpoints"][0]["interval"] = "half a minute"
    with pytest.raises(ValueError, match="interval"):
        schemas.validate_monitoring(bad_interval)


# ---------------------------------------------------------------- what the issue asks to show


def test_monitoring_and_autoscaling_render_every_object(render: Render) -> None:
    docs = render(ci("monitoring-all-on"), api_versions=CRDS)
    for kind in ("Deployment", "Service", "ServiceMonitor", "PrometheusRule", "HorizontalPodAutoscaler",
                 "PodDisruptionBudget", "ServiceAccount"):
        assert kind in kinds(docs), kind
    dashboards = [d for d in docs
                  if d["kind"] == "ConfigMap" and d["metadata"]["labels"].get("grafana_dashboard") == "1"]
    assert len(dashboards) == 1
    deployment = one(docs, "Deployment")
    assert "replicas" not in deployment["spec"], "the HPA owns the replica count"
    hpa = one(docs, "HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                             "name": deployment["metadata"]["name"]}
    assert hpa["spec"]["metrics"][0]["resource"]["name"] == "cpu"
    for kind in ("ServiceMonitor", "PrometheusRule"):
        assert one(docs, kind)["metadata"]["labels"]["release"] == "kube-prometheus-stack"


def test_monitors_need_the_crds_unless_forced(render: Render) -> None:
    without = kinds(render(ci("monitoring-all-on")))
    assert "ServiceMonitor" not in without and "PrometheusRule" not in without
    assert "ConfigMap" in without  # the dashboard needs no CRD
    force = {"serviceMonitor": {"force": True}, "prometheusRule": {"force": True}}
    forced = kinds(render(ci("monitoring-all-on"), force))
    assert "ServiceMonitor" in forced and "PrometheusRule" in forced


def test_service_monitor_scrapes_the_main_service_metrics_port(render: Render) -> None:
    docs = render(ci("monitoring-all-on"), api_versions=CRDS)
    monitor = one(docs, "ServiceMonitor")
    selected = [s for s in docs if s["kind"] == "Service"
                and monitor["spec"]["selector"]["matchLabels"].items() <= s["metadata"]["labels"].items()]
    assert [s["metadata"]["name"] for s in selected] == ["mr-memrank"]
    ports = {p["name"]: p for p in selected[0]["spec"]["ports"]}
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics"
    assert ports["metrics"]["targetPort"] == "memrank-metrics"
    assert ports["grpc"]["appProtocol"] == "grpc"


@pytest.mark.parametrize("values", CI_NAMES)
def test_probes_are_grpc_probes_on_the_grpc_port(render: Render, values: str) -> None:
    """On the gRPC port, or with TLS on the plaintext health-only port (kubelet probes cannot speak TLS)."""
    for spec in pod_specs(render(CHART / "ci" / values)):
        (container,) = memrank_containers(spec)
        named = {p["name"]: p["containerPort"] for p in container["ports"]}
        port = named.get("memrank-health", named["memrank-grpc"])
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert set(container[probe]) & {"grpc", "httpGet", "exec", "tcpSocket"} == {"grpc"}, probe
            assert container[probe]["grpc"] == {"port": port, "service": "memrank.v1.RankingService"}


@pytest.mark.parametrize("values", CI_NAMES)
def test_security_context_and_writable_tmp(render: Render, values: str) -> None:
    for spec in pod_specs(render(CHART / "ci" / values)):
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["automountServiceAccountToken"] is False
        (container,) = memrank_containers(spec)
        sc = container["securityContext"]
        assert sc["runAsNonRoot"] is True and sc["readOnlyRootFilesystem"] is True
        assert sc["allowPrivilegeEscalation"] is False and sc["privileged"] is False
        assert sc["capabilities"] == {"drop": ["ALL"]}
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        volumes = {v["name"]: v for v in spec["volumes"]}
        assert "emptyDir" in volumes[mounts["/tmp"]], "multiprocess metrics need a writable /tmp"
        assert env_of(container)["TMPDIR"] == "/tmp"
        assert set(container["resources"]) == {"requests", "limits"}


@pytest.mark.parametrize(("values", "need"), [(None, 10 + 0 + 5), ("standalone", 20 + 5 + 5)])
def test_termination_grace_exceeds_the_server_grace_period(render: Render, values: str | None, need: int) -> None:
    docs = render(*([ci(values.removesuffix("-values.yaml"))] if values else []))
    (spec,) = pod_specs(docs)
    (container,) = memrank_containers(spec)
    grace = float(env_of(container)["MEMRANK_GRACE_PERIOD_SECONDS"])
    assert spec["terminationGracePeriodSeconds"] > need > grace


def test_a_termination_grace_too_short_for_the_drain_fails(render_error: Any) -> None:
    error = render_error({"server": {"gracePeriodSeconds": 30}, "terminationGracePeriodSeconds": 30})
    assert "terminationGracePeriodSeconds: 30 must be above" in error


def test_env_and_config_file_load_in_memrank(render: Render, tmp_path: Path) -> None:
    """The rendered ConfigMap and env, read by memrank's own loader, give the settings the values ask for."""
    docs = render(ci("standalone"))
    config = one(docs, "ConfigMap", "mr-memrank")["data"]["memrank.yaml"]
    (spec,) = pod_specs(docs)
    (container,) = memrank_containers(spec)
    env = env_of(container)
    assert {k for k in env if k.startswith("MEMRANK_")} <= set(ENV_KEYS) | {"MEMRANK_CONFIG"}
    path = tmp_path / "memrank.yaml"
    path.write_text(config, encoding="utf-8")
    settings = load_settings(str(path), env={**env, "MEMRANK_CONFIG": str(path)})
    assert settings.server.address == "0.0.0.0:50051"
    assert settings.server.metrics_port == 9464 and settings.server.workers == 2
    assert settings.server.grace_period_seconds == 20
    assert settings.limits.max_candidates == 800
    assert settings.security.provenance_key_file == "/etc/memrank/keys/provenance/provenance.key"
    assert settings.security.receipt_key_file == "/etc/memrank/keys/receipt/receipt.key"
    d = settings.decision_log
    assert (d.enabled, d.content, d.sample_rate, d.sink) == (True, "hash", 0.1, "stdout")
    assert d.hash_key_file == "/etc/memrank/keys/decision-log/decision-log.key"
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert {"/etc/memrank/config", "/etc/memrank/keys/provenance", "/etc/memrank/keys/receipt",
            "/etc/memrank/keys/decision-log"} <= mounts


def test_a_config_change_rolls_the_pods_but_a_profile_change_is_reloaded(render: Render) -> None:
    def checksum(values: dict[str, Any]) -> str:
        (deployment,) = [d for d in render(values) if d["kind"] == "Deployment"]
        return str(deployment["spec"]["template"]["metadata"]["annotations"]["checksum/config"])

    assert checksum({}) != checksum({"config": {"limits": {"max_candidates": 10}}})
    # profiles and layers reach running pods through the mounted ConfigMap (memrank reloads them): no rollout
    profile = {"mine": {"base": "default", "min_score": 0.2}}
    assert checksum({}) == checksum({"config": {"profiles": profile}}) == checksum(
        {"config": {"layers": [{"name": "session", "share": 1.0}]}})


def test_a_shadow_profile_reaches_memrank_and_changes_without_a_rollout(render: Render, tmp_path: Path) -> None:
    """values.yaml's commented example: config.shadow names a candidate profile of config.profiles; memrank loads
    the rendered file with it, and changing or removing it keeps the pods (reloaded, not rolled)."""
    text = (CHART / "values.yaml").read_text().split("\nconfig: {}\n", 1)[1].split("\n\n", 1)[0]
    example = yaml.safe_load("\n".join(line.removeprefix("#") for line in text.splitlines()))
    config = {"shadow": example["shadow"], "profiles": example["profiles"]}
    docs = render({"config": config})
    path = tmp_path / "memrank.yaml"
    path.write_text(one(docs, "ConfigMap", "mr-memrank")["data"]["memrank.yaml"], encoding="utf-8")
    settings = load_settings(str(path), env={})
    assert (settings.shadow.profile, settings.shadow.sample_rate) == ("candidate", 0.25)
    assert "candidate" in settings.profiles

    def checksum(values: dict[str, Any]) -> str:
        (deployment,) = [d for d in render(values) if d["kind"] == "Deployment"]
        return str(deployment["spec"]["template"]["metadata"]["annotations"]["checksum/config"])

    assert checksum({"config": config}) == checksum({}) == checksum(
        {"config": {"shadow": {"profile": "research", "sample_rate": 1.0}}})


def test_tls_and_auth_are_mounted_files_and_env(render: Render) -> None:
    (spec,) = pod_specs(render(ci("tls-on")))
    (container,) = memrank_containers(spec)
    env = env_of(container)
    assert env["MEMRANK_TLS_CERT_FILE"] == "/etc/memrank/tls/tls.crt"
    assert env["MEMRANK_TLS_KEY_FILE"] == "/etc/memrank/tls/tls.key"
    assert env["MEMRANK_TLS_CA_FILE"] == "/etc/memrank/tls/ca.crt"
    assert env["MEMRANK_AUTH_TOKEN_FILE"] == "/etc/memrank/auth/tokens"
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["memrank-tls"]["secret"]["secretName"] == "memrank-tls"
    assert [i["key"] for i in volumes["memrank-tls"]["secret"]["items"]] == ["tls.crt", "tls.key", "ca.crt"]
    assert volumes["memrank-auth"]["secret"]["secretName"] == "memrank-auth"
    assert "args" not in container and container["command"] == LAUNCH, "no server flags beyond the entrypoint"
    assert {k for k in env if k.startswith("MEMRANK_")} <= set(ENV_KEYS) | {"MEMRANK_CONFIG"}


def test_decision_log_to_s3_is_env_memrank_loads_with_credentials_from_a_secret(render: Render,
                                                                                 tmp_path: Path) -> None:
    s3 = {"enabled": True, "url": "s3://fleet-logs/memrank/", "endpoint": "http://minio.storage:9000",
          "region": "eu-west-1", "credentials": {"secretName": "memrank-s3", "accessKeyIdKey": "id",
                                                 "secretAccessKeyKey": "secret"}}
    docs = render({"decisionLogS3": s3, "config": {"decision_log": {"s3_batch_seconds": 30}}})
    (spec,) = pod_specs(docs)
    (container,) = memrank_containers(spec)
    env = env_of(container)
    assert {k for k in env if k.startswith("MEMRANK_")} <= set(ENV_KEYS) | {"MEMRANK_CONFIG"}
    path = tmp_path / "memrank.yaml"
    path.write_text(one(docs, "ConfigMap", "mr-memrank")["data"]["memrank.yaml"], encoding="utf-8")
    d = load_settings(str(path), env=env).decision_log
    assert (d.enabled, d.sink, d.s3_url, d.s3_endpoint, d.s3_region, d.s3_batch_seconds) == (
        True, "s3", "s3://fleet-logs/memrank/", "http://minio.storage:9000", "eu-west-1", 30.0)
    refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in container["env"] if "valueFrom" in e}
    assert refs["AWS_ACCESS_KEY_ID"] == {"name": "memrank-s3", "key": "id"}
    assert refs["AWS_SECRET_ACCESS_KEY"] == {"name": "memrank-s3", "key": "secret"}


def test_decision_log_to_s3_with_irsa_sets_no_keys_and_annotates_the_service_account(render: Render) -> None:
    role = {"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/memrank-logs"}
    docs = render({"decisionLogS3": {"enabled": True, "url": "s3://fleet-logs"},
                   "serviceAccount": {"annotations": role}})
    (container,) = memrank_containers(pod_specs(docs)[0])
    env = env_of(container)
    assert env["MEMRANK_DECISION_LOG_S3_URL"] == "s3://fleet-logs"
    assert not {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "MEMRANK_DECISION_LOG_S3_ENDPOINT"} & set(env)
    assert one(docs, "ServiceAccount")["metadata"]["annotations"] == role


@pytest.mark.parametrize(("s3", "message"), [
    ({"enabled": True}, "decisionLogS3.url is required when decisionLogS3.enabled"),
    ({"enabled": True, "url": "https://fleet-logs/x"}, "/decisionLogS3/url"),
    ({"enabled": False, "url": "s3://fleet-logs", "endpoint": "minio:9000"}, "/decisionLogS3/endpoint"),
])
def test_decision_log_to_s3_refuses_a_missing_or_malformed_url(render_error: Any, s3: dict[str, Any],
                                                              message: str) -> None:
    assert message in render_error({"decisionLogS3": s3})


# Issue #41: coreutils env blocks the signals memrank handles before the interpreter starts (memrank lifts the
# block once its handlers are in; tests/reliability/test_launcher.py runs this command for real).
LAUNCH = ["env", "--block-signal=HUP,TERM,INT", "memrank", "serve"]


def _entrypoint() -> list[str]:
    """The Dockerfile's ENTRYPOINT (exec form)."""
    text = (CHART.parent.parent / "Dockerfile").read_text(encoding="utf-8")
    (line,) = [x for x in text.splitlines() if x.startswith("ENTRYPOINT ")]
    entry: list[str] = json.loads(line.removeprefix("ENTRYPOINT "))
    return entry


@pytest.mark.parametrize("values", ["standalone", "sidecar", "tls-on"])
def test_memrank_starts_with_the_early_signals_blocked(render: Render, values: str) -> None:
    """Standalone or sidecar, the container's command is the image's entrypoint: memrank under env, which
    blocks SIGHUP, SIGTERM and SIGINT before exec (a custom image without it would fail to start, not lose them)."""
    (spec,) = pod_specs(render(ci(values)))
    (container,) = memrank_containers(spec)
    assert container["command"] == LAUNCH == _entrypoint()


def test_with_tls_the_probes_use_the_plaintext_health_listener(render: Render, tmp_path: Path) -> None:
    (spec,) = pod_specs(render(ci("tls-on")))
    (container,) = memrank_containers(spec)
    env = env_of(container)
    assert env["MEMRANK_HEALTH_ADDRESS"] == "0.0.0.0:50052"
    assert {"name": "memrank-health", "containerPort": 50052, "protocol": "TCP"} in container["ports"]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["grpc"]["port"] == 50052, probe
    # The server reads the same variables: TLS files and the health listener land in its settings.
    settings = load_settings(env={k: v for k, v in env.items() if k != "MEMRANK_CONFIG"})
    assert settings.server.health_address == "0.0.0.0:50052"
    assert settings.security.tls_cert_file == "/etc/memrank/tls/tls.crt"
    assert settings.security.tls_client_ca_file == "/etc/memrank/tls/ca.crt"
    assert settings.security.auth_token_file == "/etc/memrank/auth/tokens"


def test_without_tls_the_probes_use_the_grpc_port(render: Render) -> None:
    (spec,) = pod_specs(render(ci("standalone")))
    (container,) = memrank_containers(spec)
    assert "MEMRANK_HEALTH_ADDRESS" not in env_of(container)
    assert all(container[p]["grpc"]["port"] == 50051 for p in ("startupProbe", "readinessProbe", "livenessProbe"))


# ---------------------------------------------------------------- sidecar mode


@pytest.mark.parametrize(("kube", "native"), [("1.25.0", False), ("1.28.9", False), ("1.29.0", True), ("1.37.0", True)])
def test_sidecar_is_native_from_kubernetes_1_29(render: Render, kube: str, native: bool) -> None:
    docs = render(ci("sidecar"), kube=kube)
    assert "Service" not in kinds(docs) and "HorizontalPodAutoscaler" not in kinds(docs)
    (spec,) = pod_specs(docs)
    init = [c["name"] for c in spec.get("initContainers", [])]
    regular = [c["name"] for c in spec["containers"]]
    if native:
        assert init == ["memrank"] and regular == ["agent"]
        assert spec["initContainers"][0]["restartPolicy"] == "Always"
    else:
        assert "initContainers" not in spec and regular == ["agent", "memrank"]
        assert "restartPolicy" not in spec["containers"][1]
    for doc in docs:
        if not doc["apiVersion"].startswith("monitoring.coreos.com/"):
            schemas.validate_builtin(doc, kube)


def test_forcing_native_on_an_old_release_breaks_its_schema(render: Render) -> None:
    """The schema check has teeth: restartPolicy on a container does not exist in Kubernetes 1.25."""
    docs = render(ci("sidecar"), {"sidecar": {"native": True}}, kube="1.25.0")
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    assert deployment["spec"]["template"]["spec"]["initContainers"][0]["restartPolicy"] == "Always"
    with pytest.raises(Exception, match="restartPolicy"):
        schemas.validate_builtin(deployment, "1.25.0")
    regular = render(ci("sidecar"), {"sidecar": {"native": False}}, kube="1.37.0")
    (spec,) = pod_specs(regular)
    assert [c["name"] for c in spec["containers"]] == ["agent", "memrank"]


def test_pod_monitor_selects_the_sidecar_pods(render: Render) -> None:
    docs = render(ci("sidecar"), api_versions=CRDS)
    monitor = one(docs, "PodMonitor")
    labels = one(docs, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert monitor["spec"]["podMetricsEndpoints"][0]["port"] == "memrank-metrics"
    assert "ServiceMonitor" not in kinds(docs)


PARENT_DEPLOYMENT = """\
{{- $memrank := .Subcharts.memrank }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-agent
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels:
        app: agent
        {{- include "memrank.sidecar.podLabels" $memrank | nindent 8 }}
      annotations:
        {{- include "memrank.sidecar.podAnnotations" $memrank | nindent 8 }}
    spec:
      terminationGracePeriodSeconds: {{ include "memrank.terminationGracePeriodSeconds" $memrank }}
      {{- if include "memrank.sidecar.native" $memrank }}
      initContainers:
        {{- include "memrank.sidecar.initContainers" $memrank | nindent 8 }}
      {{- end }}
      containers:
        - name: agent
          image: example/agent:1.0
          env:
            - {name: MEMRANK_TARGET, value: "localhost:{{ $memrank.Values.server.grpcPort }}"}
        {{- include "memrank.sidecar.containers" $memrank | nindent 8 }}
      volumes:
        {{- include "memrank.sidecar.volumes" $memrank | nindent 8 }}
"""


@pytest.mark.parametrize(("kube", "native"), [(schemas.OLDEST, False), ("1.28.15", False), ("1.29.0", True),
                                              ("1.37.0", True)])
def test_a_parent_chart_includes_the_sidecar(helm: str, chart: Path, tmp_path: Path, kube: str, native: bool) -> None:
    """The documented pattern: memrank as a dependency, its named templates in the parent's pod spec."""
    parent = tmp_path / "agent"
    (parent / "templates").mkdir(parents=True)
    shutil.copytree(chart, parent / "charts" / "memrank")
    (parent / "Chart.yaml").write_text(yaml.safe_dump({
        "apiVersion": "v2", "name": "agent", "version": "1.0.0",
        "dependencies": [{"name": "memrank", "version": "0.1.0"}],
    }))
    (parent / "values.yaml").write_text(yaml.safe_dump({"memrank": {"mode": "sidecar"}}))
    (parent / "templates" / "deployment.yaml").write_text(PARENT_DEPLOYMENT)
    proc = run_helm(helm, "template", "shop", parent, "--kube-version", kube)
    assert proc.returncode == 0, proc.stderr
    docs = [d for d in yaml.safe_load_all(proc.stdout) if d]
    assert sorted(kinds(docs)) == ["ConfigMap", "Deployment"], "sidecar mode renders no Deployment of its own"
    agent = one(docs, "Deployment", "shop-agent")
    spec = agent["spec"]["template"]["spec"]
    (container,) = memrank_containers(spec)
    assert (container.get("restartPolicy") == "Always") is native
    assert (container in spec.get("initContainers", [])) is native
    config = {v["name"]: v for v in spec["volumes"]}["memrank-config"]["configMap"]["name"]
    assert config == one(docs, "ConfigMap")["metadata"]["name"] == "shop-memrank"
    assert container["image"] == "memrank:0.1.0", "the image tag comes from memrank's appVersion, not the parent's"
    assert agent["spec"]["template"]["metadata"]["labels"]["memrank-sidecar"] == "shop-memrank"
    for doc in docs:
        schemas.validate_builtin(doc, kube)


# ---------------------------------------------------------------- rules and dashboard


def test_prometheus_rule_is_the_rules_file_and_passes_promtool(render: Render, chart: Path, tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        missing("promtool not found (apt-get install prometheus)")
    assert promtool is not None
    rule = one(render(ci("monitoring-all-on"), api_versions=CRDS), "PrometheusRule")
    source = yaml.safe_load((chart / RULES).read_text(encoding="utf-8"))
    assert rule["spec"] == {"groups": source["groups"]}
    rendered = tmp_path / "rendered-rules.yaml"
    rendered.write_text(yaml.safe_dump(rule["spec"]), encoding="utf-8")
    proc = subprocess.run([promtool, "check", "rules", str(rendered)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout + proc.stderr


def test_dashboard_configmap_holds_the_dashboard_file(render: Render, chart: Path) -> None:
    docs = render(ci("monitoring-all-on"))
    dashboard = one(docs, "ConfigMap", "mr-memrank-dashboard")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert dashboard["metadata"]["annotations"] == {"grafana_folder": "memrank"}
    shipped = json.loads((chart / DASHBOARD).read_text(encoding="utf-8"))
    assert json.loads(dashboard["data"]["memrank-dashboard.json"]) == shipped


def test_real_rules_and_dashboard_are_used_when_present(chart: Path) -> None:
    for name in (RULES, DASHBOARD):
        if (CHART / name).is_file():
            assert (chart / name).read_bytes() == (CHART / name).read_bytes(), f"{name}: stand-in used for a real file"
    if all((CHART / name).is_file() for name in (RULES, DASHBOARD)):
        assert chart == CHART


# ---------------------------------------------------------------- bad values are refused


@pytest.mark.parametrize(("values", "message"), [
    ({"mode": "daemonset"}, "/mode"),
    ({"replicas": 3}, "additional properties 'replicas' not allowed"),
    ({"server": {"grpcPort": 70000}}, "/server/grpcPort"),
    ({"server": {"workers": 0}}, "/server/workers"),
    ({"server": {"logLevel": "verbose"}}, "/server/logLevel"),
    ({"image": {"pullPolicy": "Sometimes"}}, "/image/pullPolicy"),
    ({"image": {"digest": "latest"}}, "/image/digest"),
    ({"probes": {"service": "memrank.v2.Other"}}, "/probes/service"),
    ({"probes": {"readiness": {"periodSeconds": 0}}}, "/probes/readiness/periodSeconds"),
    ({"securityContext": {"readOnlyRootFilesystem": False}}, "/securityContext/readOnlyRootFilesystem"),
    ({"securityContext": {"allowPrivilegeEscalation": True}}, "/securityContext/allowPrivilegeEscalation"),
    ({"sidecar": {"native": "sometimes"}}, "/sidecar/native"),
    ({"serviceMonitor": {"interval": "half a minute"}}, "/serviceMonitor/interval"),
    ({"service": {"type": "ExternalName"}}, "/service/type"),
    ({"autoscaling": {"targetCPUUtilizationPercentage": 0}}, "/autoscaling/targetCPUUtilizationPercentage"),
    ({"tls": {"enabled": True}}, "/tls/secretName"),
    ({"auth": {"enabled": True}}, "/auth/secretName"),
    ({"secrets": {"receiptKey": {"secretName": "Not_A_Name"}}}, "/secrets/receiptKey/secretName"),
    ({"dashboards": {"labels": None}}, "missing property 'labels'"),
])
def test_bad_values_fail_the_schema(render_error: Any, values: dict[str, Any], message: str) -> None:
    error = render_error(values)
    assert "values don't meet the specifications of the schema" in error
    assert message in error


@pytest.mark.parametrize(("values", "message"), [
    ({"autoscaling": {"enabled": True, "minReplicas": 5, "maxReplicas": 2}}, "must not exceed"),
    ({"mode": "sidecar", "serviceMonitor": {"enabled": True}}, "serviceMonitor.enabled needs mode: standalone"),
    ({"podMonitor": {"enabled": True}}, "podMonitor.enabled needs mode: sidecar"),
])
def test_inconsistent_values_fail_the_render(render_error: Any, values: dict[str, Any], message: str) -> None:
    assert message in render_error(values)


def test_default_values_render_for_the_oldest_release(render: Render) -> None:
    docs = render(kube=schemas.OLDEST)
    assert sorted(kinds(docs)) == ["ConfigMap", "Deployment", "PodDisruptionBudget", "Service", "Service",
                                   "ServiceAccount"]
    assert one(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["image"] == "memrank:0.1.0"


def test_packaged_chart_carries_its_files_and_not_the_ci_values(helm: str, chart: Path, tmp_path: Path) -> None:
    proc = run_helm(helm, "package", chart, "--destination", tmp_path)
    assert proc.returncode == 0, proc.stderr
    with tarfile.open(tmp_path / "memrank-0.1.0.tgz") as archive:
        names = set(archive.getnames())
    for name in ("values.yaml", "values.schema.json", RULES, DASHBOARD, "templates/_sidecar.tpl"):
        assert f"memrank/{name}" in names
    assert not any(name.startswith("memrank/ci/") for name in names)


def _bytes(quantity: str) -> int:
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "k": 10**3, "M": 10**6, "G": 10**9}
    for suffix, factor in sorted(units.items(), key=lambda u: -len(u[0])):
        if quantity.endswith(suffix):
            return int(float(quantity[: -len(suffix)]) * factor)
    return int(quantity)


@pytest.mark.parametrize("values", [None, *CI_NAMES])
def test_the_memory_limit_covers_what_the_workers_need(render: Render, values: str | None,
                                                       tmp_path: Path) -> None:
    """At the chart's own settings, the container's memory limit holds every worker at its in-flight byte budget
    (memrank's formula: memrank.grpc.inflight), so legitimate requests cannot get the pod OOM-killed."""
    from memrank.grpc.inflight import auto_budget, memory_needed

    docs = render(*([ci(values.removesuffix("-values.yaml"))] if values else []))
    config = tmp_path / "memrank.yaml"
    config.write_text(one(docs, "ConfigMap", "mr-memrank")["data"]["memrank.yaml"], encoding="utf-8")
    for spec in pod_specs(docs):
        for container in memrank_containers(spec):
            env = env_of(container)
            settings = load_settings(str(config), env={k: v for k, v in env.items() if k in ENV_KEYS})
            limit = _bytes(container["resources"]["limits"]["memory"])
            s = settings.server
            workers = max(s.workers, 1)
            budget = s.max_inflight_bytes or auto_budget(limit, workers, s.max_message_bytes, s.feature_memo_bytes)
            assert memory_needed(workers, budget, s.feature_memo_bytes) <= limit, (values, workers, budget, limit)
