"""The real `helm` binary, the chart (with its rules and dashboard files) and a render helper.

Outside CI a missing helm skips these tests and a missing rules or dashboard
file gets a stand-in in a temporary copy of the chart; in CI (env CI set)
both are failures, because scripts/ci_helm.sh installs helm and the metrics
work ships the two files.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "memrank"
CI_VALUES = sorted((CHART / "ci").glob("*-values.yaml"))
RULES = "files/prometheus-rules.yaml"
DASHBOARD = "files/memrank-dashboard.json"
IN_CI = bool(os.environ.get("CI"))

Doc = dict[str, Any]
Render = Callable[..., list[Doc]]

# Used only outside CI while the metrics work has not landed its files yet.
_STAND_INS = {
    RULES: yaml.safe_dump({"groups": [{"name": "memrank-stand-in", "rules": [{
        "alert": "MemrankStandInDown",
        "expr": 'up{job="memrank"} == 0',
        "for": "5m",
        "labels": {"severity": "warning"},
        "annotations": {"summary": "memrank target {{ $labels.instance }} is down"},
    }]}]}),
    DASHBOARD: json.dumps({"title": "memrank (stand-in)", "uid": "memrank-stand-in", "panels": []}),
}


def missing(reason: str) -> None:
    """Fail in CI, skip elsewhere."""
    if IN_CI:
        pytest.fail(f"{reason} (CI must provide it: run scripts/ci_helm.sh)")
    pytest.skip(reason)


def find_helm() -> str | None:
    """helm on PATH, else where `go install` puts it."""
    found = shutil.which("helm")
    if found:
        return found
    gopath = os.environ.get("GOPATH") or str(Path.home() / "go")
    candidate = Path(gopath) / "bin" / "helm"
    return str(candidate) if candidate.is_file() else None


@pytest.fixture(scope="session")
def helm() -> str:
    path = find_helm()
    if path is None:
        missing("helm binary not found (go install helm.sh/helm/v3/cmd/helm@v3.22.0)")
    assert path is not None
    return path


@pytest.fixture(scope="session")
def chart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The chart; outside CI, a copy with stand-ins for files the metrics work has not written yet."""
    absent = [name for name in _STAND_INS if not (CHART / name).is_file()]
    if not absent:
        return CHART
    if IN_CI:
        pytest.fail(f"chart files missing: {', '.join(absent)}")
    copy = tmp_path_factory.mktemp("chart") / "memrank"
    shutil.copytree(CHART, copy)
    for name in absent:
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (copy / name).write_text(_STAND_INS[name], encoding="utf-8")
    return copy


def run_helm(helm: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run helm; never raises on a non-zero exit (callers assert on it)."""
    return subprocess.run([helm, *map(str, args)], capture_output=True, text=True, timeout=120, check=False)


def template_args(
    chart: Path,
    tmp: Path,
    values: Iterable[Path | Mapping[str, Any]] = (),
    kube: str = "1.37.0",
    api_versions: Iterable[str] = (),
) -> list[str]:
    """Arguments of `helm template` for the given values files/mappings, Kubernetes version and APIs."""
    args = ["template", "mr", str(chart), "--namespace", "agents", "--kube-version", kube]
    for i, item in enumerate(values):
        if isinstance(item, Path):
            path = item
        else:
            path = tmp / f"values-{i}.yaml"
            path.write_text(yaml.safe_dump(dict(item)), encoding="utf-8")
        args += ["--values", str(path)]
    for api in api_versions:
        args += ["--api-versions", api]
    return args


@pytest.fixture
def render(helm: str, chart: Path, tmp_path: Path) -> Render:
    """Render the chart and return its documents; a failed render fails the test with helm's message."""

    def _render(*values: Path | Mapping[str, Any], kube: str = "1.37.0", api_versions: Iterable[str] = ()) -> list[Doc]:
        proc = run_helm(helm, *template_args(chart, tmp_path, values, kube, api_versions))
        assert proc.returncode == 0, proc.stderr
        return [doc for doc in yaml.safe_load_all(proc.stdout) if doc]

    return _render


@pytest.fixture
def render_error(helm: str, chart: Path, tmp_path: Path) -> Callable[..., str]:
    """Render values that must be refused; return helm's error text."""

    def _render_error(*values: Path | Mapping[str, Any], kube: str = "1.37.0") -> str:
        proc = run_helm(helm, *template_args(chart, tmp_path, values, kube))
        assert proc.returncode != 0, f"helm accepted values it must refuse: {values}"
        return proc.stderr

    return _render_error
