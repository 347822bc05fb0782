"""Profile data: which signals a ranking uses, how each is normalised and weighed.

A profile is plain frozen data that the scoring core reads. Reading one from
config data, and checking it, is ``memrank.profiles.model``'s job (a Profile
itself refuses only an unknown formula, fusion or importance_rules, which
would silently run another path); the
built-in profiles are ``memrank.profiles.builtin``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from memrank.core.types import Placement

# The one table of a profile's bounds that both its readers check: the profile checker
# (profiles.model) and the wire's validation of a request (api.validate).
WEIGHT_RANGE = (0.0, 10.0)  # a signal's weight: in a profile, or a request's weight_overrides
THRESHOLD_RANGE = (0.0, 1.0)  # relevance_threshold and relevance_floor, on retrieval_score's [0, 1] scale
SHARE_RANGE = (0.0, 1.0)  # min_score (profile and request), diversity_lambda, blends, thresholds
# The names that choose a code path. A Profile refuses any other at construction (an unknown fusion would
# otherwise run as rrf, the branch the others fall through to); profiles.model names the key for config data.
FORMULAS = ("weighted_sum", "agent_observer", "blend")
FUSIONS = ("max", "weighted", "rrf")
IMPORTANCE_RULES = ("category", "cues")  # core.signals.importance, core.signals.importance_cues


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
    The relevance gates, the constant-weight sharing and the two importance rule sets are the
    ``core.scoring.gates``, ``core.scoring.constant`` and ``core.signals.importance_cues`` docstrings'.
    """

    name: str
    description: str
    signals: tuple[SignalSpec, ...]
    formula: str = "weighted_sum"
    fusion: str = "max"
    facet_weights: Mapping[str, float] = field(default_factory=dict)
    compatibility: bool = False
    relevance_threshold: float | None = None  # per candidate: on the caller's absolute scale only
    relevance_floor: float | None = None  # per batch: nothing relevant when no candidate reaches it, else all stay
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
    share_constant_weight: bool = False  # weighted_sum: a constant signal's weight goes to the others
    importance_rules: str = "category"  # "category" (core.signals.importance) or "cues" (importance_cues)

    def __post_init__(self) -> None:
        for name, known in (("formula", FORMULAS), ("fusion", FUSIONS), ("importance_rules", IMPORTANCE_RULES)):
            if getattr(self, name) not in known:
                raise ValueError(f"profile {self.name!r}: {name} {getattr(self, name)!r} is not one of "
                                 f"{', '.join(known)}")

    def with_overrides(self, overrides: Mapping[str, float]) -> Profile:
        """A copy with some signal weights replaced (names must exist)."""
        if not overrides:
            return self
        signals = tuple(
            replace(s, weight=float(overrides[s.name])) if s.name in overrides else s for s in self.signals
        )
        return replace(self, signals=signals)
