"""The chart's schema of `config:` (scripts/gen_chart_schema.py) agrees with the server's own settings.

Every key the server prints is allowed and a typo is refused at every nesting level; every bound, form and
choice the schema states is the server's: a value at a bound is taken by both load_settings and the schema,
one just outside it is refused by both (and by helm's own validator). Also: monitoring objects the cluster
cannot take are not left out silently.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from memrank.config import BOUNDS, builtin_defaults, load_settings
from memrank.core.errors import ConfigError
from memrank.core.text.stem import LANGUAGES
from memrank.profiles.model import FORMULAS, FUSIONS, NORMALIZATIONS
from tests.helm.schemas import require
from tests.support.helm import CHART, CI_VALUES, ROOT, run_helm, template_args

SCRIPT = ROOT / "scripts" / "gen_chart_schema.py"
EXAMPLES = ROOT / "examples"
CRDS = ("monitoring.coreos.com/v1",)
Data = dict[str, Any]


@functools.cache
def gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_chart_schema", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def schema() -> Data:
    data: Data = json.loads((CHART / "values.schema.json").read_text(encoding="utf-8"))["properties"]["config"]
    return data


def schema_errors(config: Data) -> list[str]:
    """JSON pointers of what the committed schema refuses in a config file's data."""
    jsonschema = require("jsonschema")
    validator = jsonschema.Draft7Validator(schema())
    return sorted("/" + "/".join(map(str, e.absolute_path)) for e in validator.iter_errors(config))


def server_error(tmp_path: Path, config: Data) -> str | None:
    """load_settings' error for a config file holding ``config`` (None: accepted)."""
    path = tmp_path / "memrank.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    try:
        load_settings(str(path), env={})
    except ConfigError as exc:
        return str(exc)
    return None


def printed(path: Path | None = None) -> Data:
    """--print-config's output (Settings.to_yaml), as data."""
    data: Data = yaml.safe_load(load_settings(str(path) if path else None, env={}).to_yaml())
    return data


def custom_profile() -> Data:
    data: Data = yaml.safe_load((EXAMPLES / "custom-profile.yaml").read_text(encoding="utf-8"))
    return data


def at(key: str, value: Any, profile: str = "p") -> Data:
    """A config file setting one dotted key of BOUNDS / PROFILE_BOUNDS / FORMS: profiles.X is X of a profile
    based on the default one; profiles.signals.X, profiles.recency.X and layers.X are X of the first item."""
    head, _, name = key.partition(".")
    if head == "layers":
        return {"layers": [{"name": "a", name: value}]}
    if head != "profiles":
        return {head: {name: value}}
    field, _, leaf = name.partition(".")
    body = {field: value}
    if field == "signals" and leaf:
        body = {"signals": [{"name": "relevance", leaf: value}]}
    elif field == "recency" and leaf:
        body = {"recency": {leaf: value}}
    return {"profiles": {profile: {"base": "default", **body}}}


def pointer(key: str, profile: str = "p") -> str:
    """The JSON pointer helm and jsonschema name for the key as ``at`` sets it."""
    head, _, name = key.partition(".")
    if head == "layers":
        return f"/layers/0/{name}"
    if head != "profiles":
        return f"/{head}/{name}"
    field, _, leaf = name.partition(".")
    if field == "signals" and leaf:
        return f"/profiles/{profile}/signals/0/{leaf}"
    return f"/profiles/{profile}/{name.replace('.', '/')}"


def bound_cases() -> list[tuple[str, str]]:
    keys = [*BOUNDS, *(f"profiles.{k}" for k in gen().PROFILE_BOUNDS)]
    return [(key, side) for key in keys for side in ("lo", "hi") if bounds_of(key)[side == "hi"] is not None]


def bounds_of(key: str) -> tuple[float, float | None]:
    if key.startswith("profiles."):
        found: tuple[float, float | None] = gen().PROFILE_BOUNDS[key.removeprefix("profiles.")]
        return found
    return BOUNDS[key]


def node_of(key: str) -> Data:
    """The schema node of a dotted key (profiles.X: the profile object's X)."""
    props = schema()["properties"]
    head, _, name = key.partition(".")
    if head == "layers":
        node: Data = props["layers"]["items"]["properties"][name]
        return node
    if head == "profiles":
        prof = props["profiles"]["additionalProperties"]["properties"]
        sub, _, leaf = name.partition(".")
        if sub == "signals":
            node = prof["signals"]["items"]["properties"][leaf]
        elif sub == "recency":
            node = prof["recency"]["properties"][leaf]
        else:
            node = prof[name]
        return node
    node = props[head]["properties"][name]
    return node


def edge(key: str, side: str) -> tuple[float, float]:
    """(the bound, the nearest value beyond it) of an integer or number key."""
    lo, hi = bounds_of(key)
    bound = lo if side == "lo" else hi
    assert bound is not None
    integer = "integer" in node_of(key)["type"]
    if integer:
        return bound, bound - 1 if side == "lo" else bound + 1
    return bound, math.nextafter(bound, -math.inf if side == "lo" else math.inf)


# Strings with a form or a set of values: (key, value, accepted). The server decides; the schema must agree.
FORMS: list[tuple[str, Any, bool]] = [
    # health_address's port differs from address's 50051 (the server refuses two listeners on one port)
    *[(k, v.replace("50051", port), True)
      for k, port in (("server.address", "50051"), ("server.health_address", "50052"))
      for v in ("0.0.0.0:50051", "[::]:50051", "localhost:0", "h:65535", "h:065535", "a:b:1")],
    *[(k, v, False) for k in ("server.address", "server.health_address")
      for v in ("h:65536", ":50051", "localhost", "h:", "h:5x", "h:-1", "h: 1")],
    ("server.health_address", None, True),
    *[("server.log_level", v, True) for v in ("debug", "info", "warning", "error")],
    ("server.log_level", "verbose", False),
    ("server.log_level", "INFO", False),
    *[("security.auth_open_methods", v, True) for v in (
        "", "grpc.health.v1.Health", " a.B , /a.B/Check ,", ",,", "_x,/p.S/M")],
    *[("security.auth_open_methods", v, False) for v in ("a b", "/a.B", "/a.B/", "1abc", "a.B/C", "a,;")],
    *[("decision_log.sink", v, True) for v in ("stdout", "file", "s3")],
    *[("decision_log.s3_url", v, True) for v in (None, "", "s3://logs", "s3://my.bucket-1/fleet/a/", "s3://abc/")],
    *[("decision_log.s3_url", v, False) for v in (
        "https://logs/x", "s3://Logs/x", "s3://ab", "s3://", "s3:///x", "s3://logs/a b", "logs/x")],
    *[("decision_log.s3_endpoint", v, True) for v in (None, "", "http://minio:9000", "https://s3.example.com/")],
    *[("decision_log.s3_endpoint", v, False) for v in ("minio:9000", "ftp://x", "http://")],
    ("decision_log.sink", "syslog", False),
    *[("decision_log.content", v, True) for v in ("omit", "hash", "plain")],
    ("decision_log.content", "redact", False),
    *[("tracing.endpoint", v, True) for v in (
        None, "", "http://x", "https://collector:4318/v1/traces", "http://h/")],
    *[("tracing.endpoint", v, False) for v in ("ftp://x", "http://", "http:///v1", "http://x y", "localhost:4318")],
    *[("tracing.service_name", v, True) for v in (None, "", "memrank", " a ")],
    *[("tracing.service_name", v, False) for v in (" ", "\t\t")],
    *[("profiles.formula", v, True) for v in FORMULAS],
    ("profiles.formula", "product", False),
    *[("profiles.fusion", v, True) for v in FUSIONS],
    ("profiles.fusion", "min", False),
    *[("profiles.signals.normalization", v, True) for v in NORMALIZATIONS],
    ("profiles.signals.normalization", "softmax", False),
    *[("profiles.placement", v, True) for v in ("best_first", "best_last", "edges")],
    ("profiles.placement", "middle", False),
    *[("profiles.lexical_stemmer", v, True) for v in (*LANGUAGES, None)],
    ("profiles.lexical_stemmer", "klingon", False),
    # wrong types, which the server refuses too
    ("server.workers", "two", False),
    ("server.grace_period_seconds", "soon", False),
    ("server.grace_period_seconds", True, False),
    ("decision_log.enabled", "maybe", False),
    ("tracing.sampler_ratio", "half", False),
    ("limits.max_candidates", None, False),
    ("layers.floor_tokens", "many", False),
    ("layers.min_score", None, True),
    ("profiles.relevance_threshold", None, True),
    ("profiles.relevance_threshold", "high", False),
    ("profiles.min_score", "high", False),
    ("profiles.signals.weight", "heavy", False),
    ("profiles.kind_prior", {"fact": "high"}, False),
    ("profiles.kind_prior", {"anything": 0.5}, True),
    ("profiles.signals", [], False),
    ("profiles.recency", 3, False),
]


def form_id(case: tuple[str, Any, bool]) -> str:
    return f"{case[0]}={case[1]!r}"


# ---------------------------------------------------------------- the schema is the generated one


def test_committed_schema_is_what_the_script_makes() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "server"), str(ROOT)])}
    proc = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr


def test_check_fails_on_a_stale_schema(tmp_path: Path) -> None:
    stale = json.loads((CHART / "values.schema.json").read_text(encoding="utf-8"))
    del stale["properties"]["config"]["properties"]["server"]["properties"]["workers"]
    path = tmp_path / "values.schema.json"
    path.write_text(json.dumps(stale, indent=2) + "\n", encoding="utf-8")
    assert gen().main(["--check", "--output", str(path)]) == 1
    assert gen().main(["--output", str(path)]) == 0
    assert path.read_text(encoding="utf-8") == (CHART / "values.schema.json").read_text(encoding="utf-8")


def test_schema_is_a_draft7_schema_refusing_unknown_keys_everywhere() -> None:
    jsonschema = require("jsonschema")
    jsonschema.Draft7Validator.check_schema(schema())

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node:
                assert node.get("additionalProperties") is False, f"{path}: must refuse unknown keys"
            for key, value in node.items():
                walk(value, f"{path}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{path}/{i}")

    walk(schema(), "config")


def test_schema_keys_are_the_servers_keys() -> None:
    props = schema()["properties"]
    defaults = builtin_defaults()
    assert list(props) == list(defaults)
    for section, values in defaults.items():
        if isinstance(values, dict) and section != "profiles":
            assert list(props[section]["properties"]) == list(values), section
    every = printed(EXAMPLES / "custom-profile.yaml")
    assert set(props["layers"]["items"]["properties"]) == set(every["layers"][0])
    profile_keys = set(props["profiles"]["additionalProperties"]["properties"])
    for name, body in every["profiles"].items():
        # what profile_to_mapping prints, the ignored "name", and the two keys only a config file uses
        assert profile_keys == set(body) | {"name", "base", "half_life_hours"}, name


# ---------------------------------------------------------------- what the server prints, what it refuses


@pytest.mark.parametrize("source", [None, "custom-profile.yaml"])
def test_schema_accepts_the_servers_print_config(source: str | None) -> None:
    assert schema_errors(printed(EXAMPLES / source if source else None)) == []


def typo_levels() -> list[tuple[str, list[str | int], bool]]:
    """(name, path to a mapping in --print-config's output, whether load_settings refuses a typo there too)."""
    sections: list[tuple[str, list[str | int], bool]] = [
        (section, [section], True) for section in ("server", "limits", "security", "drift", "decision_log", "tracing")]
    return [
        ("top", [], True),
        *sections,
        ("layer", ["layers", 0], True),
        ("profile", ["profiles", "my-support"], True),
        # load_settings ignores unknown keys of a signal and of recency (profiles/model.py): only the schema
        # refuses them.
        ("signal", ["profiles", "my-support", "signals", 0], False),
        ("recency", ["profiles", "my-support", "recency"], False),
    ]


@pytest.mark.parametrize(("level", "path", "server_refuses"), typo_levels(), ids=[t[0] for t in typo_levels()])
def test_a_typo_is_refused_at_every_level(tmp_path: Path, level: str, path: list[str | int],
                                          server_refuses: bool) -> None:
    data = printed(EXAMPLES / "custom-profile.yaml")
    node: Any = data
    for part in path:
        node = node[part]
    node["wokers"] = 2
    assert schema_errors(data) == ["/" + "/".join(map(str, path))], level
    if server_refuses:
        error = server_error(tmp_path, data)
        assert error is not None and "wokers: unknown" in error, error


@pytest.mark.parametrize(("key", "side"), bound_cases(), ids=[f"{k}-{s}" for k, s in bound_cases()])
def test_every_bound_is_the_servers(tmp_path: Path, key: str, side: str) -> None:
    bound, beyond = edge(key, side)
    assert server_error(tmp_path, at(key, bound)) is None
    assert schema_errors(at(key, bound)) == []
    error = server_error(tmp_path, at(key, beyond))
    named = key.removeprefix("profiles.").replace("signals.", "signals[0].").replace("layers.", "layers[0].")
    assert error is not None and named in error, error
    assert schema_errors(at(key, beyond)) == [pointer(key)]


@pytest.mark.parametrize("case", FORMS, ids=form_id)
def test_every_form_and_choice_is_the_servers(tmp_path: Path, case: tuple[str, Any, bool]) -> None:
    key, value, accepted = case
    assert (server_error(tmp_path, at(key, value)) is None) is accepted
    assert (schema_errors(at(key, value)) == []) is accepted


# ---------------------------------------------------------------- helm itself


def helm_template(helm: str, chart: Path, tmp_path: Path, *values: Path | Data,
                  extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return run_helm(helm, *template_args(chart, tmp_path, values), *extra)


def test_set_with_a_misspelt_key_fails_naming_it(helm: str, chart: Path, tmp_path: Path) -> None:
    proc = helm_template(helm, chart, tmp_path, extra=("--set", "config.server.worker=2"))
    assert proc.returncode != 0
    assert "at '/config/server': additional properties 'worker' not allowed" in proc.stderr, proc.stderr
    assert helm_template(helm, chart, tmp_path, extra=("--set", "config.server.workers=2")).returncode == 0


def valid_configs() -> list[tuple[str, Path | Data]]:
    return [
        ("custom-profile", {"config": custom_profile()}),
        ("print-config", {"config": printed(EXAMPLES / "custom-profile.yaml")}),
        *[(p.name, p) for p in CI_VALUES],
        ("helm-sidecar-values", EXAMPLES / "helm-sidecar-values.yaml"),
    ]


@pytest.mark.parametrize("values", [v for _, v in valid_configs()], ids=[n for n, _ in valid_configs()])
def test_valid_configs_render(helm: str, chart: Path, tmp_path: Path, values: Path | Data) -> None:
    proc = helm_template(helm, chart, tmp_path, values)
    assert proc.returncode == 0, proc.stderr


def test_the_custom_profile_reaches_the_server(helm: str, chart: Path, tmp_path: Path) -> None:
    proc = helm_template(helm, chart, tmp_path, {"config": custom_profile()})
    assert proc.returncode == 0, proc.stderr
    [configmap] = [d for d in yaml.safe_load_all(proc.stdout)
                   if d and d["kind"] == "ConfigMap" and d["metadata"]["name"] == "mr-memrank"]
    path = tmp_path / "memrank.yaml"
    path.write_text(configmap["data"]["memrank.yaml"], encoding="utf-8")
    settings = load_settings(str(path), env={})
    assert settings.profiles["my-support"].min_score == 0.25 and settings.limits.max_candidates == 800


def merged(*configs: Data) -> Data:
    out: Data = {}
    for config in configs:
        for section, body in config.items():
            if section == "layers":
                out["layers"] = body
            elif section == "profiles":
                for name, prof in body.items():
                    into = out.setdefault("profiles", {}).setdefault(name, {})
                    for key, value in prof.items():
                        if isinstance(value, list) and isinstance(into.get(key), list):
                            into[key] = [{**a, **b} for a, b in zip(into[key], value, strict=True)]
                        elif isinstance(value, dict) and isinstance(into.get(key), dict):
                            into[key] = {**into[key], **value}
                        else:
                            into[key] = value
            else:
                out.setdefault(section, {}).update(body)
    return out


@pytest.mark.parametrize("side", ["lo", "hi"])
def test_helm_agrees_on_every_bound(helm: str, chart: Path, tmp_path: Path, side: str) -> None:
    """All keys at one side's bounds in one render (taken), all just beyond them in another (each refused)."""
    cases = [key for key, s in bound_cases() if s == side]
    inside = merged(*(at(key, edge(key, side)[0]) for key in cases))
    proc = helm_template(helm, chart, tmp_path, {"config": inside})
    assert proc.returncode == 0, proc.stderr
    outside = merged(*(at(key, edge(key, side)[1]) for key in cases))
    proc = helm_template(helm, chart, tmp_path, {"config": outside})
    assert proc.returncode != 0
    for key in cases:
        assert f"at '/config{pointer(key)}': {'minimum' if side == 'lo' else 'maximum'}" in proc.stderr, key


def test_helm_agrees_on_every_form_and_choice(helm: str, chart: Path, tmp_path: Path) -> None:
    """Helm's validator (Go, its own regular expressions) says what the Python one says: the profile cases in
    one render, a profile each; the others one render each."""
    cases = [c for c in FORMS if c[0].startswith("profiles.")]
    names = [f"case{i:03d}" for i in range(len(cases))]
    proc = helm_template(helm, chart, tmp_path,
                         {"config": merged(*(at(k, v, name) for (k, v, _), name in zip(cases, names, strict=True)))})
    for case, name in zip(cases, names, strict=True):
        refused = f"'/config/profiles/{name}'" in proc.stderr or f"'/config/profiles/{name}/" in proc.stderr
        assert refused is not case[2], (form_id(case), proc.stderr)
    for case in FORMS:
        key, value, accepted = case
        if not key.startswith("profiles."):
            proc = helm_template(helm, chart, tmp_path, {"config": at(key, value)})
            assert (proc.returncode == 0) is accepted, (form_id(case), proc.stderr)


def test_helm_refuses_a_typo_at_every_level(helm: str, chart: Path, tmp_path: Path) -> None:
    data = printed(EXAMPLES / "custom-profile.yaml")
    expected = []
    for _, path, _ in typo_levels():
        node: Any = data
        for part in path:
            node = node[part]
        node["wokers"] = 2
        expected.append("/config" + "".join(f"/{p}" for p in path))
    proc = helm_template(helm, chart, tmp_path, {"config": data})
    assert proc.returncode != 0
    for where in expected:
        assert f"at '{where}': additional properties 'wokers' not allowed" in proc.stderr, where


# ---------------------------------------------------------------- monitoring without the CRDs


MONITORS = {"serviceMonitor": "ServiceMonitor", "podMonitor": "PodMonitor", "prometheusRule": "PrometheusRule"}


def monitoring_values(mode: str) -> list[Path | Data]:
    if mode == "standalone":
        return [CHART / "ci" / "monitoring-all-on-values.yaml"]
    return [CHART / "ci" / "sidecar-values.yaml",
            {"podMonitor": {"enabled": True}, "prometheusRule": {"enabled": True}}]


def enabled_monitors(mode: str) -> list[str]:
    return ["serviceMonitor", "prometheusRule"] if mode == "standalone" else ["podMonitor", "prometheusRule"]


@pytest.mark.parametrize("mode", ["standalone", "sidecar"])
def test_monitors_without_the_crds_say_so_in_the_manifest(helm: str, chart: Path, tmp_path: Path,
                                                          mode: str) -> None:
    proc = helm_template(helm, chart, tmp_path, *monitoring_values(mode))
    assert proc.returncode == 0, proc.stderr
    kinds = [d["kind"] for d in yaml.safe_load_all(proc.stdout) if d]
    for key in enabled_monitors(mode):
        kind = MONITORS[key]
        assert kind not in kinds
        text = f"# WARNING: {key}.enabled is true, but the cluster does not serve monitoring.coreos.com/v1"
        assert text in proc.stdout, proc.stdout[-3000:]
        assert f"no {kind.lower()}s.monitoring.coreos.com\n# CRD" in proc.stdout
        assert f"set {key}.force=true" in proc.stdout
    assert "helm install prometheus-operator-crds prometheus-community/prometheus-operator-crds" in proc.stdout
    assert "pass\n# --api-versions monitoring.coreos.com/v1" in proc.stdout
    other = ({"serviceMonitor", "podMonitor"} - set(enabled_monitors(mode))).pop()
    assert f"{other}.enabled" not in proc.stdout


@pytest.mark.parametrize("mode", ["standalone", "sidecar"])
@pytest.mark.parametrize("how", ["api-versions", "force"])
def test_monitors_with_the_crds_or_forced_render_without_a_warning(helm: str, chart: Path, tmp_path: Path,
                                                                   mode: str, how: str) -> None:
    values = monitoring_values(mode)
    extra: tuple[str, ...] = ()
    if how == "api-versions":
        extra = tuple(a for api in CRDS for a in ("--api-versions", api))
    else:
        values = [*values, {key: {"force": True} for key in enabled_monitors(mode)}]
    proc = helm_template(helm, chart, tmp_path, *values, extra=extra)
    assert proc.returncode == 0, proc.stderr
    kinds = [d["kind"] for d in yaml.safe_load_all(proc.stdout) if d]
    for key in enabled_monitors(mode):
        assert MONITORS[key] in kinds
    assert "WARNING" not in proc.stdout


def test_notes_name_the_missing_crd(helm: str, chart: Path, tmp_path: Path) -> None:
    """NOTES.txt (printed by helm install, not by helm template), rendered here as a template of a copy."""
    copy_dir = tmp_path / "chart" / "memrank"
    shutil.copytree(chart, copy_dir)
    shutil.copy(copy_dir / "templates" / "NOTES.txt", copy_dir / "notes.txt")
    (copy_dir / "templates" / "zz-notes.yaml").write_text(
        '# NOTES\n# {{ tpl (.Files.Get "notes.txt") . | replace "\\n" "\\n# " }}\n', encoding="utf-8")

    def notes(*extra: str) -> str:
        proc = run_helm(helm, *template_args(copy_dir, tmp_path, monitoring_values("standalone")), *extra,
                        "--show-only", "templates/zz-notes.yaml")
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    without = notes()
    for key in enabled_monitors("standalone"):
        kind = MONITORS[key]
        assert f"# WARNING: {key}.enabled is true, but the cluster does not serve monitoring.coreos.com/v1" in without
        assert f"{kind.lower()}s.monitoring.coreos.com" in without
    assert "prometheus-community/prometheus-operator-crds" in without
    assert "WARNING" not in notes("--api-versions", CRDS[0])

