"""Built-in profiles (placeholder until the scoring core lands)."""

from __future__ import annotations

from types import MappingProxyType

from memrank.profiles.model import Profile, SignalSpec

BUILTIN_PROFILES = MappingProxyType({
    "default": Profile(
        name="default",
        description="memrank's own profile",
        signals=(SignalSpec("relevance", 1.0, "none"),),
    ),
})
