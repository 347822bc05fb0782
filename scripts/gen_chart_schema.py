"""Generate the chart's schema of `config:` (the memrank config file) from the server's own settings model.

    python scripts/gen_chart_schema.py            # rewrite properties.config of helm/memrank/values.schema.json
    python scripts/gen_chart_schema.py --check    # exit 1 if the committed schema differs from what this makes

One source of truth: the keys are the settings dataclasses' fields (the sections of defaults.yaml in
memrank.config, LayerSpec, core.profile.Profile), the types their annotations, the numeric bounds
memrank.config.BOUNDS (the table the server's checks read; a profile's are profile_from_mapping's, repeated
below and tested against it), the choices the server's own tuples (LOG_LEVELS, DECISION_SINKS, FORMULAS, ...).
Every object refuses unknown keys, so `helm install --set config.server.worker=2` fails naming `worker`
instead of a pod crash-looping. Nothing is required: `config:` holds only what differs from the defaults.
Checks across keys (tls_cert_file with tls_key_file, decision_log.path with sink file, ...) stay the server's:
the chart's environment variables can supply the other half. The rest of values.schema.json is kept as is.
Needs memrank importable (pip install -e ., or PYTHONPATH=server).
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any

from memrank import config
from memrank.config import keys
from memrank.core.batch import LayerSpec
from memrank.core.profile import SHARE_RANGE, THRESHOLD_RANGE, WEIGHT_RANGE, Profile, RecencySpec, SignalSpec
from memrank.core.text.stem import LANGUAGES
from memrank.core.types import Placement
from memrank.profiles.model import FORMULAS, FUSIONS, IMPORTANCE_RULES, NORMALIZATIONS

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "helm" / "memrank" / "values.schema.json"

# _check_server / _check_health_address: host:port, the port all digits in [0, 65535] (leading zeros allowed).
HOST_PORT = r"^.+:0*([0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])$"
# Keys whose strings have a form or a fixed set of values (the server's own patterns and tuples).
STRINGS: dict[str, dict[str, Any]] = {
    "server.address": {"pattern": HOST_PORT},
    "server.health_address": {"pattern": HOST_PORT},
    "server.log_level": {"enum": list(keys.LOG_LEVELS)},
    # comma-separated, blanks around entries and empty entries allowed (_check_security strips and skips them)
    "security.auth_open_methods": {
        "pattern": rf"^\s*(?:(?:{keys.OPEN_METHOD})\s*)?(?:,\s*(?:(?:{keys.OPEN_METHOD})\s*)?)*$"},
    "decision_log.sink": {"enum": list(keys.DECISION_SINKS)},
    "decision_log.content": {"enum": list(keys.DECISION_CONTENT)},
    "decision_log.fsync": {"enum": list(keys.DECISION_FSYNC)},
    "decision_log.s3_url": {"pattern": rf"^(?:{keys.S3_URL})?$"},  # "" = null (load_settings)
    "decision_log.s3_endpoint": {"pattern": rf"^(?:{keys.HTTP_URL})?$"},
    "tracing.endpoint": {"pattern": rf"^(?:{keys.TRACING_ENDPOINT})?$"},  # "" = null (load_settings)
    "tracing.service_name": {"pattern": r"^$|\S"},  # not blank; "" = null (load_settings)
}
# A profile's bounds: the weight, threshold and share ranges from memrank.core.profile (the table the
# profile checker and the wire's validation both read), the rest as profile_from_mapping keeps them;
# tests/helm/test_config_schema.py checks every one of these against it, a value just outside each.
PROFILE_UNIT_KEYS = ("diversity_lambda", "dedupe_threshold", "retrieval_blend", "min_score", "admit_threshold",
                     "hold_threshold", "lexical_blend", "context_lexical")
PROFILE_BOUNDS: dict[str, tuple[float, float | None]] = {
    **{name: SHARE_RANGE for name in PROFILE_UNIT_KEYS},
    "relevance_threshold": THRESHOLD_RANGE,
    "relevance_floor": THRESHOLD_RANGE,
    "half_life_hours": (1e-6, None),
    "recency.decay_per_hour": (1e-9, 1),
    "recency.floor": (0, 1),
    "signals.weight": WEIGHT_RANGE,
}


def _doc(cls: type) -> str:
    return (cls.__doc__ or cls.__name__).strip().splitlines()[0]


def _scalar(hint: Any, where: str) -> dict[str, Any]:
    """int / float / str / bool, or one of them | None."""
    names = {int: "integer", float: "number", str: "string", bool: "boolean"}
    if isinstance(hint, types.UnionType):
        parts = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(parts) != 1 or len(typing.get_args(hint)) != 2 or parts[0] not in names:
            raise SystemExit(f"{where}: no schema for type {hint} (teach scripts/gen_chart_schema.py)")
        return {"type": [names[parts[0]], "null"]}
    if hint not in names:
        raise SystemExit(f"{where}: no schema for type {hint} (teach scripts/gen_chart_schema.py)")
    return {"type": names[hint]}


def _bounded(node: dict[str, Any], bounds: tuple[float, float | None] | None) -> dict[str, Any]:
    if bounds is not None:
        node["minimum"] = bounds[0]
        if bounds[1] is not None:
            node["maximum"] = bounds[1]
    return node


def _closed(properties: dict[str, Any], description: str) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "description": description, "properties": properties}


def _section(name: str, cls: type, defaults: dict[str, Any]) -> dict[str, Any]:
    """One section of the config file: its dataclass's fields, which must be defaults.yaml's keys (the keys
    load_settings accepts) too."""
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    if names != list(defaults):
        raise SystemExit(f"{name}: {cls.__name__}'s fields {names} are not defaults.yaml's keys {list(defaults)}")
    properties = {}
    for field in names:
        key = f"{name}.{field}"
        node = _bounded(_scalar(hints[field], key), config.BOUNDS.get(key))
        properties[field] = {**node, **STRINGS.get(key, {})}
    return _closed(properties, _doc(cls))


def _layers() -> dict[str, Any]:
    hints = typing.get_type_hints(LayerSpec)
    properties = {f.name: _bounded(_scalar(hints[f.name], f"layers.{f.name}"), config.BOUNDS.get(f"layers.{f.name}"))
                  for f in dataclasses.fields(LayerSpec)}
    properties["name"]["minLength"] = 1
    item = {**_closed(properties, _doc(LayerSpec)), "required": ["name"]}
    return {"type": "array", "description": "Default layer policies, used when a request sends none (the list "
            "replaces the built-in one).", "items": item}


def _profile_field(name: str, hint: Any) -> dict[str, Any]:
    def number(key: str) -> dict[str, Any]:
        return _bounded({"type": "number"}, PROFILE_BOUNDS.get(key))

    if name == "signals":
        signal = {"name": {"type": "string"}, "weight": number("signals.weight"),
                  "normalization": {"type": "string", "enum": list(NORMALIZATIONS)}}
        if [f.name for f in dataclasses.fields(SignalSpec)] != list(signal):
            raise SystemExit(f"SignalSpec's fields are not {list(signal)} (teach scripts/gen_chart_schema.py)")
        return {"type": "array", "minItems": 1, "items": {**_closed(signal, _doc(SignalSpec)), "required": ["name"]},
                "description": "Replaces the base's list."}
    if name == "recency":
        return _closed({f.name: number(f"recency.{f.name}") for f in dataclasses.fields(RecencySpec)},
                       _doc(RecencySpec))
    if name == "formula":
        return {"type": "string", "enum": list(FORMULAS)}
    if name == "fusion":
        return {"type": "string", "enum": list(FUSIONS)}
    if name == "importance_rules":
        return {"type": "string", "enum": list(IMPORTANCE_RULES)}
    if name == "placement":
        return {"type": "string", "enum": [p.name.lower() for p in Placement if p is not Placement.UNSPECIFIED]}
    if name == "lexical_stemmer":
        return {"type": ["string", "null"], "enum": [*LANGUAGES, None]}
    if typing.get_origin(hint) is not None and typing.get_args(hint) == (str, float):  # Mapping[str, float]
        return {"type": "object", "additionalProperties": {"type": "number"}}
    node = _scalar(hint, f"profiles.*.{name}")
    if name == "name":
        node["description"] = "Ignored: the profile's key names it."
    return _bounded(node, PROFILE_BOUNDS.get(name))


def _profiles() -> dict[str, Any]:
    hints = typing.get_type_hints(Profile)
    properties = {f.name: _profile_field(f.name, hints[f.name]) for f in dataclasses.fields(Profile)}
    # Keys profile_from_mapping reads besides Profile's fields ("base" is taken off first by config._profiles).
    properties["half_life_hours"] = _bounded({"type": "number", "description": "Sets recency.decay_per_hour to "
                                              "0.5 ** (1 / hours)."}, PROFILE_BOUNDS["half_life_hours"])
    properties["base"] = {"type": "string", "description": "Start from this profile (built-in or defined here)."}
    return {"type": "object", "description": "Extra or overriding profiles: name -> fields of a profile "
            "(`base: NAME` starts from another one).", "additionalProperties": _closed(properties, _doc(Profile))}


def config_schema() -> dict[str, Any]:
    """The JSON Schema (draft-07) of a memrank config file."""
    defaults = config.builtin_defaults()
    hints = typing.get_type_hints(config.Settings)
    properties: dict[str, Any] = {}
    for key, value in defaults.items():
        if key == "layers":
            properties[key] = _layers()
        elif key == "profiles":
            properties[key] = _profiles()
        elif dataclasses.is_dataclass(hints.get(key)):
            properties[key] = _section(key, hints[key], value)
        else:
            raise SystemExit(f"defaults.yaml key {key!r}: not a Settings section (teach scripts/gen_chart_schema.py)")
    return _closed(properties, "memrank config file content (keys of defaults.yaml), mounted as MEMRANK_CONFIG; "
                   "generated from the server's settings by scripts/gen_chart_schema.py.")


def render(current: str) -> str:
    """values.schema.json's text with properties.config replaced (everything else, and key order, kept)."""
    schema = json.loads(current)
    schema["properties"]["config"] = config_schema()
    return json.dumps(schema, indent=2) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the schema, or with --check compare it with the committed file."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the committed schema is out of date")
    parser.add_argument("--output", type=Path, default=OUTPUT, help=f"the file (default {OUTPUT})")
    args = parser.parse_args(argv)
    current = args.output.read_text(encoding="utf-8")
    text = render(current)
    if args.check:
        if current != text:
            diff = difflib.unified_diff(current.splitlines(), text.splitlines(), "committed", "generated",
                                        lineterm="", n=1)
            print(f"{args.output}: properties.config is out of date; run python scripts/gen_chart_schema.py",
                  file=sys.stderr)
            print("\n".join(list(diff)[:60]), file=sys.stderr)
            return 1
        print(f"{args.output}: properties.config is up to date")
        return 0
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote properties.config of {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
