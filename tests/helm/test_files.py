"""Static checks of the chart's values files and of the Dockerfile (no Docker engine runs here)."""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from tests.helm.schemas import require
from tests.support.helm import CHART, ROOT

KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z_][\w.-]*):(?:\s|$)")


def documented_keys(lines: list[str]) -> list[tuple[str, bool]]:
    """(dotted key, documented) for each mapping key of values.yaml outside lists.

    A key is documented by a `# --` comment block right above it, or by such a
    comment on one of its ancestors (whose value is then a block of plain data).
    """
    out: list[tuple[str, bool]] = []
    stack: list[tuple[int, str, bool]] = []
    for i, line in enumerate(lines):
        match = KEY.match(line)
        if not match or line.lstrip().startswith("#"):
            continue
        indent = len(match["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        above = i - 1
        while above >= 0 and lines[above].strip().startswith("#") and not lines[above].strip().startswith("# --"):
            above -= 1
        own = above >= 0 and lines[above].strip().startswith("# --")
        inherited = any(doc for _, _, doc in stack)
        dotted = ".".join([name for _, name, _ in stack] + [match["key"]])
        stack.append((indent, match["key"], own or inherited))
        out.append((dotted, own or inherited))
    return out


def leaves(data: Any, prefix: str = "") -> list[str]:
    if isinstance(data, dict) and data:
        return [leaf for key, value in data.items() for leaf in leaves(value, f"{prefix}{key}.")]
    return [prefix.rstrip(".")]


def test_every_value_is_commented() -> None:
    lines = (CHART / "values.yaml").read_text(encoding="utf-8").splitlines()
    found = documented_keys(lines)
    undocumented = {key for key, ok in found if not ok}
    values = yaml.safe_load("\n".join(lines))
    missing = [leaf for leaf in leaves(values) if leaf in undocumented]
    assert not missing, f"values without a '# --' comment: {missing}"
    assert {key for key, _ in found} >= set(leaves(values)), "the checker saw every leaf"


def test_schema_describes_every_value() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text(encoding="utf-8"))
    values = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))

    def walk(node: dict[str, Any], data: Any, path: str) -> None:
        assert "description" in node or path == "", f"{path}: no description"
        if node.get("type") == "object" and "properties" in node and isinstance(data, dict):
            assert node.get("additionalProperties") is False, f"{path}: must refuse unknown keys"
            for key, value in data.items():
                assert key in node["properties"], f"{path}.{key}: not in values.schema.json"
                walk(node["properties"][key], value, f"{path}.{key}")

    walk(schema, values, "")


def test_dockerfile_is_non_root_runtime_only_and_serves() -> None:
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    instructions = [line.split(None, 1) for line in text.splitlines() if line and not line.startswith((" ", "#"))]
    names = [parts[0] for parts in instructions]
    # One base for both stages, a build argument defaulting to the official slim image (issue 22).
    assert "ARG BASE_IMAGE=docker.io/library/python:3.12-slim" in text.splitlines()
    assert names.count("FROM") == 2 and all(p[1].startswith("${BASE_IMAGE}") for p in instructions if p[0] == "FROM")
    assert "HEALTHCHECK" not in names
    assert ["USER", "10001:10001"] in instructions
    assert ["ENTRYPOINT", '["env", "--block-signal=HUP,TERM,INT", "memrank", "serve"]'] in instructions
    assert ["EXPOSE", "50051 9464"] in instructions
    runtime = text.split("FROM ${BASE_IMAGE}\n", 1)[1]
    # The runtime stage installs nothing: it copies the build stage's virtual environment.
    assert "COPY --from=build /opt/memrank /opt/memrank" in runtime and "pip" not in runtime
    assert "[dev]" not in text and "[test]" not in text
    values = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
    assert values["securityContext"]["runAsUser"] == 10001 == values["podSecurityContext"]["runAsUser"]
    assert (values["server"]["grpcPort"], values["server"]["metricsPort"]) == (50051, 9464)


def test_dockerignore_keeps_the_context_to_the_package() -> None:
    lines = [line for line in (ROOT / ".dockerignore").read_text().splitlines() if line and not line.startswith("#")]
    assert lines[0] == "*"
    assert {"!pyproject.toml", "!README.md", "!server/"} <= set(lines)


def test_chart_versions_agree() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))
    # The package version has one source, memrank/__init__.py (pyproject reads it: dynamic = ["version"]).
    init = (ROOT / "server" / "memrank" / "__init__.py").read_text(encoding="utf-8")
    version = re.search(r'^__version__ = "([^"]+)"', init, re.M)
    assert version is not None
    assert 'dynamic = ["version"]' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert chart["appVersion"] == version[1], "image tag default = the package version"


def test_values_schema_is_a_valid_draft7_schema_and_accepts_the_defaults() -> None:
    jsonschema = require("jsonschema")  # comes with kubernetes-validate (the `helm` extra)
    schema = json.loads((CHART / "values.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft7Validator.check_schema(schema)
    jsonschema.Draft7Validator(schema).validate(yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8")))
