"""The real `helm` binary, the chart (with its rules and dashboard files) and a render helper.

Outside CI a missing helm skips these tests and a missing rules or dashboard
file gets a stand-in in a temporary copy of the chart; in CI (env CI set)
both are failures, because scripts/ci_helm.sh installs helm and the metrics
work ships the two files.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.helm import _STAND_INS, CHART, IN_CI, Doc, Render, find_helm, missing, run_helm, template_args


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


@pytest.fixture
def render(helm: str, chart: Path, tmp_path: Path) -> Render:
    """Render the chart and return its documents; a failed render fails the test with helm's message."""

    def _render(
        *values: Path | Mapping[str, Any], kube: str | None = "1.37.0", api_versions: Iterable[str] = ()
    ) -> list[Doc]:
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
