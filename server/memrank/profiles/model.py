"""Profiles from config data: ``profile_from_mapping`` builds a ``core.profile.Profile`` and names the key
and the value of anything wrong; ``profile_to_mapping`` writes one back.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from dataclasses import fields
from types import MappingProxyType
from typing import Any

from memrank.core.errors import ConfigError
from memrank.core.profile import (
    FORMULAS,
    FUSIONS,
    IMPORTANCE_RULES,
    SHARE_RANGE,
    THRESHOLD_RANGE,
    WEIGHT_RANGE,
    Profile,
    RecencySpec,
    SignalSpec,
)
from memrank.core.signals import SIGNALS
from memrank.core.text.stem import LANGUAGES
from memrank.core.types import Placement

NORMALIZATIONS = ("none", "min_max", "z_score", "rank")


def one_of(key: str, value: Any, known: Iterable[str], what: str = "") -> str:
    """``value`` when it is one of ``known``, else a ConfigError naming the key, the choices and the nearest."""
    choices = sorted(known)
    if isinstance(value, str) and value in choices:
        return value
    near = difflib.get_close_matches(str(value), choices, n=1, cutoff=0.6) if isinstance(value, str) else []
    hint = f"; did you mean {near[0]!r}?" if near else ""
    head = f"is not {what}; known:" if what else "is not one of"
    raise ConfigError(f"{key}: {value!r} {head} {', '.join(choices)}{hint}")


def _number(key: str, value: Any, lo: float = -math.inf, hi: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{key}: expected a finite number, got {value!r}")
    if not lo <= value <= hi:
        raise ConfigError(f"{key}: {value!r} is outside [{lo}, {hi}]")
    return float(value)


def _signals(key: str, raw: Any) -> tuple[SignalSpec, ...]:
    if not isinstance(raw, list) or not raw:
        raise ConfigError(f"{key}: expected a non-empty list of signals, got {raw!r}")
    out = []
    for i, item in enumerate(raw):
        k = f"{key}[{i}]"
        if not isinstance(item, Mapping) or "name" not in item:
            raise ConfigError(f"{k}: expected a mapping with a name, got {item!r}")
        name = one_of(f"{k}.name", item["name"], SIGNALS, "a signal")
        norm = one_of(f"{k}.normalization", item.get("normalization", "none"), NORMALIZATIONS)
        out.append(SignalSpec(name, _number(f"{k}.weight", item.get("weight", 0.0), *WEIGHT_RANGE), norm))
    return tuple(out)


def profile_from_mapping(key: str, raw: Mapping[str, Any], base: Profile | None = None) -> Profile:
    """Build a profile from config data; ``base`` supplies fields the mapping omits."""
    known = {f.name for f in fields(Profile)} | {"half_life_hours"}
    for name in raw:
        if name not in known:
            near = difflib.get_close_matches(str(name), known, n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise ConfigError(f"{key}.{name}: unknown profile key (known: {', '.join(sorted(known))}){hint}")
    values: dict[str, Any] = {} if base is None else {f.name: getattr(base, f.name) for f in fields(Profile)}
    values.setdefault("description", "")
    for name, value in raw.items():
        k = f"{key}.{name}"
        if name == "signals":
            values[name] = _signals(k, value)
        elif name in ("formula", "fusion"):
            values[name] = one_of(k, value, FORMULAS if name == "formula" else FUSIONS)
        elif name == "importance_rules":
            values[name] = one_of(k, value, IMPORTANCE_RULES)
        elif name in ("diversity_lambda", "dedupe_threshold", "retrieval_blend", "min_score",
                      "admit_threshold", "hold_threshold", "lexical_blend", "context_lexical"):
            values[name] = _number(k, value, *SHARE_RANGE)
        elif name == "lexical_stemmer":
            if value is not None and value not in LANGUAGES:
                raise ConfigError(f"{k}: {value!r} is not a Snowball language (known: {', '.join(LANGUAGES)}, or null)")
            values[name] = value
        elif name == "share_constant_weight":
            if not isinstance(value, bool):
                raise ConfigError(f"{k}: expected true or false, got {value!r}")
            values[name] = value
        elif name in ("relevance_threshold", "relevance_floor"):
            values[name] = None if value is None else _number(k, value, *THRESHOLD_RANGE)
        elif name == "half_life_hours":
            values["recency"] = RecencySpec.from_half_life(_number(k, value, 1e-6), values["recency"].floor
                                                           if "recency" in values else 0.05)
        elif name == "recency":
            if not isinstance(value, Mapping):
                raise ConfigError(f"{k}: expected a mapping, got {value!r}")
            values[name] = RecencySpec(
                decay_per_hour=_number(f"{k}.decay_per_hour", value.get("decay_per_hour", 0.995), 1e-9, 1.0),
                floor=_number(f"{k}.floor", value.get("floor", 0.05), 0.0, 1.0),
            )
        elif name in ("facet_weights", "kind_prior", "stage_weights"):
            if not isinstance(value, Mapping):
                raise ConfigError(f"{k}: expected a mapping, got {value!r}")
            values[name] = MappingProxyType({str(a): _number(f"{k}.{a}", b) for a, b in value.items()})
        elif name == "placement":
            values[name] = Placement[one_of(k, str(value).lower(), ("best_first", "best_last", "edges")).upper()]
        else:
            values[name] = value
    if "signals" not in values:
        raise ConfigError(f"{key}.signals: required")
    values["name"] = key.rsplit(".", 1)[-1]
    return Profile(**values)


def profile_to_mapping(profile: Profile) -> dict[str, Any]:
    """The profile as config data that ``profile_from_mapping`` reads back to an equal profile (every field)."""
    out: dict[str, Any] = {}
    for f in fields(Profile):
        value = getattr(profile, f.name)
        if f.name == "name":
            continue
        if f.name == "signals":
            value = [{"name": s.name, "weight": s.weight, "normalization": s.normalization} for s in value]
        elif f.name == "recency":
            value = {"decay_per_hour": value.decay_per_hour, "floor": value.floor}
        elif f.name == "placement":
            value = value.name.lower()
        elif isinstance(value, Mapping):
            value = dict(value)
        out[f.name] = value
    return out
