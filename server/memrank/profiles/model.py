"""Profile data: which signals a ranking uses, how each is normalised and weighed.

A profile is plain frozen data. ``profile_from_mapping`` builds one from a
config mapping and names the key and the value of anything wrong.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any

from memrank.core.errors import ConfigError
from memrank.core.text.stem import LANGUAGES
from memrank.core.types import Placement

NORMALIZATIONS = ("none", "min_max", "z_score", "rank")
FUSIONS = ("max", "weighted", "rrf")
FORMULAS = ("weighted_sum", "agent_observer", "blend")


@dataclass(frozen=True)
class SignalSpec:
    """One signal of a profile: its weight and normaliser."""

    name: str
    weight: float
    normalization: str = "none"


@dataclass(frozen=True)
class RecencySpec:
    """Shape of the recency decay: decay**hours, never below floor."""

    decay_per_hour: float = 0.995
    floor: float = 0.05

    @staticmethod
    def from_half_life(hours: float, floor: float = 0.05) -> RecencySpec:
        """Decay rate whose half-life is ``hours``."""
        return RecencySpec(decay_per_hour=0.5 ** (1.0 / hours), floor=floor)


DEFAULT_KIND_PRIOR: Mapping[str, float] = MappingProxyType(
    {"decision": 0.35, "fact": 0.30, "preference": 0.25, "failure": 0.20, "attempt": 0.05}
)


@dataclass(frozen=True)
class Profile:
    """A named scoring profile.

    ``formula``: ``weighted_sum`` (combined = sum of weight x normalised),
    ``agent_observer`` (the Go scorer, raw values summed), or ``blend``
    (combined = retrieval_blend x retrieval + (1 - retrieval_blend) x quality,
    the seven-component design).

    Signal weights are the profile's own weights (e.g. 0.35 for relevance in
    lians-recall). Under ``blend`` the effective weight reported in a
    breakdown is ``(1 - retrieval_blend) x weight`` (0.2 x 0.35 = 0.07), so
    contribution = effective weight x normalised still holds.
    ``lexical_blend`` mixes the lexical signal into raw relevance:
    relevance = (1 - lexical_blend) x fused retrieval + lexical_blend x lexical.
    ``context_lexical`` is the lexical part of a neighbour's match in the
    context signal: match = (1 - context_lexical) x minmax(relevance) +
    context_lexical x lexical.
    """

    name: str
    description: str
    signals: tuple[SignalSpec, ...]
    formula: str = "weighted_sum"
    fusion: str = "max"
    facet_weights: Mapping[str, float] = field(default_factory=dict)
    compatibility: bool = False
    relevance_threshold: float | None = None
    min_score: float = 0.0
    diversity_lambda: float = 1.0  # 1 = no diversity pass
    dedupe_threshold: float = 0.92
    retrieval_blend: float = 0.0
    recency: RecencySpec = field(default_factory=RecencySpec)
    kind_prior: Mapping[str, float] = field(default_factory=lambda: DEFAULT_KIND_PRIOR)
    gate_zero_importance: bool = True
    placement: Placement = Placement.BEST_FIRST
    stage_weights: Mapping[str, float] = field(default_factory=dict)
    admit_threshold: float = 0.6
    hold_threshold: float = 0.4
    lexical_blend: float = 0.0
    context_lexical: float = 0.25
    lexical_stemmer: str | None = None  # a Snowball language (core.text.stem.LANGUAGES); None: exact words

    def weight_of(self, signal: str) -> float:
        """The weight of a signal, 0 when the profile does not use it."""
        return next((s.weight for s in self.signals if s.name == signal), 0.0)

    def with_overrides(self, overrides: Mapping[str, float]) -> Profile:
        """A copy with some signal weights replaced (names must exist)."""
        if not overrides:
            return self
        signals = tuple(
            replace(s, weight=float(overrides[s.name])) if s.name in overrides else s for s in self.signals
        )
        return replace(self, signals=signals)


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
        norm = item.get("normalization", "none")
        if norm not in NORMALIZATIONS:
            raise ConfigError(f"{k}.normalization: {norm!r} is not one of {', '.join(NORMALIZATIONS)}")
        out.append(SignalSpec(str(item["name"]), _number(f"{k}.weight", item.get("weight", 0.0), 0.0, 10.0), norm))
    return tuple(out)


def profile_from_mapping(key: str, raw: Mapping[str, Any], base: Profile | None = None) -> Profile:
    """Build a profile from config data; ``base`` supplies fields the mapping omits."""
    known = {f.name for f in fields(Profile)} | {"half_life_hours"}
    for name in raw:
        if name not in known:
            raise ConfigError(f"{key}.{name}: unknown profile key (known: {', '.join(sorted(known))})")
    values: dict[str, Any] = {} if base is None else {f.name: getattr(base, f.name) for f in fields(Profile)}
    values.setdefault("description", "")
    for name, value in raw.items():
        k = f"{key}.{name}"
        if name == "signals":
            values[name] = _signals(k, value)
        elif name == "formula" and value not in FORMULAS:
            raise ConfigError(f"{k}: {value!r} is not one of {', '.join(FORMULAS)}")
        elif name == "fusion" and value not in FUSIONS:
            raise ConfigError(f"{k}: {value!r} is not one of {', '.join(FUSIONS)}")
        elif name in ("diversity_lambda", "dedupe_threshold", "retrieval_blend", "min_score",
                      "admit_threshold", "hold_threshold", "lexical_blend", "context_lexical"):
            values[name] = _number(k, value, 0.0, 1.0)
        elif name == "lexical_stemmer":
            if value is not None and value not in LANGUAGES:
                raise ConfigError(f"{k}: {value!r} is not a Snowball language (known: {', '.join(LANGUAGES)}, or null)")
            values[name] = value
        elif name == "relevance_threshold":
            values[name] = None if value is None else _number(k, value)
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
            try:
                values[name] = Placement[str(value).upper()]
            except KeyError:
                raise ConfigError(f"{k}: {value!r} is not one of best_first, best_last, edges") from None
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
