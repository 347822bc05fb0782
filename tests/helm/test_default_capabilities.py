"""`helm lint` and `helm template` with helm's default capabilities (no --kube-version, no cluster).

A helm built from source (`go install`, as scripts/ci_helm.sh does) reports Kubernetes 1.20 when it is not
asked about a cluster; a released helm reports the Kubernetes release it was built against. Either way the
chart must lint and render, and what it cannot use below a release it must say, with how to pass the real one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helm import schemas
from tests.support.helm import CHART, CI_VALUES, Doc, Render, run_helm, template_args

CI_NAMES = [p.name for p in CI_VALUES]
PROBES = ("startupProbe", "readinessProbe", "livenessProbe")


def memrank_container(docs: list[Doc]) -> dict[str, Any]:
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    spec = deployment["spec"]["template"]["spec"]
    every = spec.get("initContainers", []) + spec["containers"]
    (container,) = [c for c in every if any(p["name"] == "memrank-grpc" for p in c.get("ports", []))]
    return container


@pytest.mark.parametrize("values", [None, *CI_NAMES])
def test_helm_lint_strict_passes_with_default_capabilities(helm: str, chart: Path, values: str | None) -> None:
    args = ["lint", "--strict", str(chart)]
    if values:
        args += ["--values", str(CHART / "ci" / values)]
    proc = run_helm(helm, *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[WARNING]" not in proc.stdout and "[ERROR]" not in proc.stdout, proc.stdout


@pytest.mark.parametrize("values", [None, *CI_NAMES])
def test_helm_template_passes_with_default_capabilities(render: Render, values: str | None) -> None:
    """Rendered for whatever helm reports; every document validates (fields the chart uses exist from 1.20)."""
    docs = render(*([CHART / "ci" / values] if values else []), kube=None)
    assert "Deployment" in [d["kind"] for d in docs]
    for doc in docs:
        schemas.validate_builtin(doc, schemas.OLDEST)


def test_the_floor_is_no_newer_than_what_helm_reports_by_default(helm: str, tmp_path: Path) -> None:
    """The chart's floor admits the version this helm assumes when no cluster is asked."""
    probe = tmp_path / "probe"
    (probe / "templates").mkdir(parents=True)
    (probe / "Chart.yaml").write_text("apiVersion: v2\nname: probe\nversion: 0.1.0\n", encoding="utf-8")
    (probe / "templates" / "cm.yaml").write_text(
        "kind: ConfigMap\napiVersion: v1\nmetadata: {name: probe}\n"
        "data: {kube: {{ .Capabilities.KubeVersion.Version | quote }}}\n", encoding="utf-8")
    proc = run_helm(helm, "template", probe)
    assert proc.returncode == 0, proc.stderr
    reported = yaml.safe_load(proc.stdout)["data"]["kube"].lstrip("v")
    assert tuple(map(int, reported.split(".")[:2])) >= tuple(map(int, schemas.FLOOR.split(".")[:2])), reported


@pytest.mark.parametrize("kube", [schemas.FLOOR, "1.23.17"])
@pytest.mark.parametrize("values", [None, "tls-on-values.yaml"])
def test_below_1_24_the_probes_are_tcp_socket_probes_and_say_why(
    helm: str, chart: Path, tmp_path: Path, kube: str, values: str | None
) -> None:
    """No grpc probes before 1.24: tcpSocket on the same port, and a comment naming --kube-version."""
    files = [CHART / "ci" / values] if values else []
    proc = run_helm(helm, *template_args(chart, tmp_path, files, kube))
    assert proc.returncode == 0, proc.stderr
    assert f"Kubernetes v{kube} < 1.24 has no grpc probes" in proc.stdout
    assert "--kube-version" in proc.stdout
    container = memrank_container([d for d in yaml.safe_load_all(proc.stdout) if d])
    named = {p["name"]: p["containerPort"] for p in container["ports"]}
    port = named.get("memrank-health", named["memrank-grpc"])
    for probe in PROBES:
        body = container[probe]
        assert "grpc" not in body, probe
        assert body["tcpSocket"] == {"port": port}, probe


@pytest.mark.parametrize("kube", ["1.24.0", "1.37.0"])
def test_from_1_24_the_probes_are_grpc_probes_without_the_comment(
    helm: str, chart: Path, tmp_path: Path, kube: str
) -> None:
    proc = run_helm(helm, *template_args(chart, tmp_path, [], kube))
    assert proc.returncode == 0, proc.stderr
    assert "has no grpc probes" not in proc.stdout
    container = memrank_container([d for d in yaml.safe_load_all(proc.stdout) if d])
    for probe in PROBES:
        body = container[probe]
        assert set(body) & {"grpc", "tcpSocket"} == {"grpc"}, probe


def test_pdb_and_hpa_use_the_ga_apis_helm_knows(render: Render) -> None:
    """helm's default API set has policy/v1 and autoscaling/v2, so `helm template` renders them (v1beta1 and
    v2beta2 are only for a real cluster that does not serve the GA APIs)."""
    docs = render({"autoscaling": {"enabled": True}}, kube=None)
    versions = {d["kind"]: d["apiVersion"] for d in docs}
    assert versions["PodDisruptionBudget"] == "policy/v1"
    assert versions["HorizontalPodAutoscaler"] == "autoscaling/v2"


def test_below_the_floor_helm_refuses(helm: str, chart: Path, tmp_path: Path) -> None:
    proc = run_helm(helm, *template_args(chart, tmp_path, [], "1.19.0"))
    assert proc.returncode != 0
    assert f">={schemas.FLOOR}-0" in proc.stderr
