"""Schema checks for rendered manifests.

Built-in kinds: the Kubernetes JSON schemas that `kubernetes-validate` ships,
strict (unknown fields are errors). Prometheus Operator kinds: the pydantic
models of `cloudcoil.models.prometheus_operator`, generated from the operator's
CRD schemas (patterns, enums, types); pydantic ignores unknown fields, so a
document must also survive a round trip through its model unchanged.
"""

from __future__ import annotations

import importlib
from typing import Any

from tests.support.helm import missing

MONITORING_KINDS = ("ServiceMonitor", "PodMonitor", "PrometheusRule")
# The chart's kubeVersion floor (Chart.yaml): what the templates need, and helm's default when built from source.
FLOOR = "1.20.0"
# The oldest release whose schemas kubernetes-validate ships; its newest release is the ceiling. Renders for
# FLOOR..1.24 are checked against OLDEST's schemas: every field the chart uses exists from FLOOR on.
OLDEST = "1.25.0"


def require(name: str) -> Any:
    """Import a test dependency of the `helm` extra (skipped outside CI when absent)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        missing(f"{name} is not installed (pip install -e '.[helm]')")
        raise


def newest() -> str:
    """The newest Kubernetes release whose schemas kubernetes-validate ships."""
    return str(require("kubernetes_validate.utils").latest_version())


def shipped_versions() -> list[str]:
    """Every Kubernetes release whose schemas kubernetes-validate ships."""
    return list(require("kubernetes_validate.utils").all_versions())


def validate_builtin(doc: dict[str, Any], kube: str) -> None:
    """Raise if doc breaks the strict schema of its kind at Kubernetes `kube`."""
    require("kubernetes_validate").validate(doc, kube, strict=True)


def validate_monitoring(doc: dict[str, Any]) -> None:
    """Raise if doc breaks its Prometheus Operator CRD model or carries fields the model does not know."""
    models = require("cloudcoil.models.prometheus_operator.v1")
    model = getattr(models, doc["kind"]).model_validate(doc)
    again = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    if again != doc:
        raise ValueError(f"{doc['kind']} has fields its CRD does not define: {_diff(doc, again)}")


def _diff(a: Any, b: Any, path: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in a:
            if key not in b:
                return f"{path}.{key}"
            if a[key] != b[key]:
                return _diff(a[key], b[key], f"{path}.{key}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _diff(x, y, f"{path}[{i}]")
    return path or "(root)"


def validate(doc: dict[str, Any], kube: str) -> None:
    """Validate one rendered document against the schema of its kind."""
    if doc["apiVersion"].startswith("monitoring.coreos.com/"):
        assert doc["kind"] in MONITORING_KINDS, doc["kind"]
        validate_monitoring(doc)
    else:
        validate_builtin(doc, kube)
