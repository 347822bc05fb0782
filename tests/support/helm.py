"""Helm in tests: the real `helm` binary (found, or the test skipped outside CI and failed in CI), the chart's
paths, and `helm template`'s arguments."""

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


def run_helm(helm: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run helm; never raises on a non-zero exit (callers assert on it)."""
    return subprocess.run([helm, *map(str, args)], capture_output=True, text=True, timeout=120, check=False)


def template_args(
    chart: Path,
    tmp: Path,
    values: Iterable[Path | Mapping[str, Any]] = (),
    kube: str | None = "1.37.0",
    api_versions: Iterable[str] = (),
) -> list[str]:
    """Arguments of `helm template` for the given values files/mappings, Kubernetes version and APIs.

    kube=None passes no --kube-version: helm's default capabilities (a helm built from source says 1.20).
    """
    args = ["template", "mr", str(chart), "--namespace", "agents"]
    if kube is not None:
        args += ["--kube-version", kube]
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
