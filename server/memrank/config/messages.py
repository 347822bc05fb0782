"""pydantic's validation errors as memrank's: one ``ConfigError`` naming the dotted key, for the error memrank
checks first."""

from __future__ import annotations

import difflib
import re
import typing
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from memrank.config.sections import BOUNDS, HINTS, SECTIONS
from memrank.config.sources import ENV_KEYS, ConfigFile
from memrank.core.errors import ConfigError

_CHECK = "memrank_config"  # fail's
_UNKNOWN = ("extra_forbidden", "unexpected_keyword_argument", "invalid_key")  # invalid_key: not a string
_BOUND = ("greater_than_equal", "less_than_equal")
_EXPECTED = {"int_type": "int", "float_type": "float", "finite_number": "a finite number", "bool_type": "true or false",
             "string_type": "a string", "dataclass_type": "a mapping", "dict_type": "a mapping", "list_type": "a list"}
# The sections in the order their errors are reported; server.health_address's check comes after the limits.
_ORDER = ("server", "limits", "server.health_address", "security", "drift", "decision_log", "tracing", "shadow",
          "layers", "profiles")
_LAST = 1 << 30


def _index(items: Any, item: Any) -> int:
    items = list(items) if isinstance(items, Mapping | list | tuple) else []
    return items.index(item) if item in items else _LAST


def _rank(err: ErrorDetails, key: str, file: Mapping[str, Any]) -> tuple[int, int, int, int, int, str]:
    """Where the error stands in the order memrank checks in (the first one found is reported): a file's unknown
    keys, in the file's order; then section by section: the section's form, its keys' types (in key order), their
    forms, their bounds, the section's checks across keys; layers item by item (form, unknown keys, each key)."""
    loc, kind = err["loc"], err["type"]
    head = str(loc[0]) if loc else ""
    if kind in _UNKNOWN and head != "layers":
        return 0, _index(file, head), _index(file.get(head), loc[1]) if len(loc) > 1 else -1, 0, 0, ""
    section = _index(_ORDER, key if kind == _CHECK and key in _ORDER else head)
    if head == "layers" and len(loc) > 1:
        name = str(loc[2]) if len(loc) > 2 else ""
        step = -2 if not name else -1 if kind in _UNKNOWN else 2 * _index(HINTS, f"layers.{name}") + (kind in _BOUND)
        return 1, section, 1, int(loc[1]), step, name if kind in _UNKNOWN else ""
    if len(loc) == 1:
        return 1, section, 9 if kind == _CHECK else 0, 0, 0, ""
    if kind in _BOUND:
        return 1, section, 3, _index(BOUNDS, key), 0, ""
    return 1, section, 2 if kind == _CHECK else 1, _index(HINTS, key), 0, ""


def _message(err: ErrorDetails, key: str, written: Mapping[str, str]) -> str:
    kind, value = err["type"], err["input"]
    if kind == _CHECK:
        return f"{key}: {err.get('ctx', {})['detail']}"
    if kind in _UNKNOWN:
        if key.startswith("layers["):
            return f"{key}: unknown layer key"
        section = SECTIONS.get(key.rpartition(".")[0])
        known = [f.name for f in fields(section)] if section else list(ConfigFile.model_fields)
        near = difflib.get_close_matches(key.rpartition(".")[2], known, n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        return f"{key}: unknown key (known: {', '.join(sorted(known))}){hint}"
    if kind in _BOUND:
        bound_key = re.sub(r"\[\d+\]", "", key)
        lo, hi = BOUNDS[bound_key]
        hint = HINTS[bound_key]
        number = float(value) if hint is float or float in typing.get_args(hint) else int(value)  # as checked
        if hi is not None:
            return f"{key}: {number!r} is outside [{lo}, {hi}]"
        return f"{key}: {number!r} {'must be >=' if bound_key == 'layers.share' else 'must be at least'} {lo}"
    if kind == "int_type" and isinstance(value, float):
        return f"{key}: expected a whole number, got {value!r}"
    if kind not in _EXPECTED:
        return f"{key}: {err['msg']}"
    expected = "str" if kind == "string_type" and isinstance(value, bool) else _EXPECTED[kind]
    shown = "null" if value is None and kind == "string_type" else repr(written.get(key, value))
    return f"{key}: expected {expected}, got {shown}"


def config_error(exc: ValidationError, file: Mapping[str, Any], written: Mapping[str, str]) -> ConfigError:
    """The ConfigError of the error found first (``_rank``); ``written``: variables' text, shown for their keys."""
    found = []
    for err in exc.errors():
        *parents, last = err["loc"] or ("config",)
        loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parents).lstrip(".")
        loc += f"[{last}]" if isinstance(last, int) and err["type"] != "invalid_key" else f".{last}"
        key = str(err.get("ctx", {}).get("key") or loc.lstrip("."))
        found.append((_rank(err, key, file), _named_by_variable(_message(err, key, written), key, written)))
    return ConfigError(min(found)[1])


_VARIABLES = {key: var for var, key in ENV_KEYS.items()}


def _named_by_variable(message: str, key: str, written: Mapping[str, str]) -> str:
    """A key whose value came from its variable is named with the variable, which is what the operator set:
    "server.workers (set by MEMRANK_WORKERS): expected int, got 'abc'"."""
    if key not in written or not message.startswith(f"{key}:"):
        return message
    return f"{key} (set by {_VARIABLES[key]}){message[len(key):]}"


# ---------------------------------------------------------------- profiles, the policy version, loading
