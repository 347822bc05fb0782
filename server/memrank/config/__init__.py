"""Settings: one frozen object, read once (built-in defaults < file < env < flags).

This is the only package that reads the environment. pydantic-settings merges the sources (the packaged
defaults.yaml, the --config file, the MEMRANK_* variables of ENV_KEYS, the flags); pydantic validates the result
against the section dataclasses below: each key's strict type and ``Field`` bounds, then each section's checks
across keys. Every error is one ``ConfigError`` naming the key and the bad value.

Types are strict, as the chart's values.schema.json states them: in a config file a number is not a string, a
string is not a number, and true is neither. A whole-number key takes a float without a fraction, as JSON
Schema's "integer" does (400.0 is 400; 400.7 is refused). An environment variable is text: it is read as its
key's type by pydantic's parsing ("400" and "400.0" are 400; true/false, 1/0, yes/no, on/off) and then checked as
a file's value would be. A key that may be null reads "" as null (what an unset variable or chart value passes).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from types import MappingProxyType
from typing import Any

from pydantic import ValidationError
from pydantic_settings import InitSettingsSource, PydanticBaseSettingsSource

from memrank.config.messages import config_error
from memrank.config.sections import (
    BOUNDS,
    DecisionLogSettings,
    DriftSettings,
    Limits,
    SecuritySettings,
    ServerSettings,
    ShadowSettings,
    TracingSettings,
)
from memrank.config.settings import Settings
from memrank.config.sources import ENV_KEYS, ConfigFile, EnvSource, FileSource, builtin_defaults, nest
from memrank.core.batch import LayerSpec
from memrank.core.errors import ConfigError
from memrank.core.profile import Profile
from memrank.profiles.builtin import BUILTIN_PROFILES
from memrank.profiles.model import profile_from_mapping, profile_to_mapping

__all__ = [
    "BOUNDS",
    "DECISION_LOG_LOCK_ENV",
    "ENV_KEYS",
    "DecisionLogSettings",
    "DriftSettings",
    "Limits",
    "SecuritySettings",
    "ServerSettings",
    "Settings",
    "SettingsSource",
    "ShadowSettings",
    "TracingSettings",
    "builtin_defaults",
    "config_file",
    "decision_log_lock",
    "load_settings",
    "policy_version_of",
]


def _profiles(raw: Mapping[Any, Any]) -> Mapping[str, Profile]:
    """The built-in profiles, then the file's: each on its ``base`` (a profile of the file, in any order, or a
    built-in one; without one, or naming itself, the built-in profile of its name if there is one)."""
    bodies: dict[str, dict[Any, Any]] = {}
    for name, body in raw.items():
        if not isinstance(body, Mapping):
            raise ConfigError(f"profiles.{name}: expected a mapping, got {body!r}")
        bodies[str(name)] = dict(body)
    out: dict[str, Profile] = dict(BUILTIN_PROFILES)
    done: set[str] = set()

    def build(name: str, chain: tuple[str, ...]) -> Profile:
        if name in done:
            return out[name]
        if name in chain:  # a -> b -> a: no profile of the cycle has a base to start from
            cycle = " -> ".join((*chain[chain.index(name):], name))
            raise ConfigError(f"profiles.{name}.base: the profiles' bases form a cycle: {cycle}")
        body = dict(bodies[name])
        named = body.pop("base", None)
        base_name = str(named) if named else name
        base: Profile | None
        if base_name != name and base_name in bodies:
            base = build(base_name, (*chain, name))
        elif (base := BUILTIN_PROFILES.get(base_name)) is None and named:
            known = ", ".join(sorted(set(out) | set(bodies)))
            raise ConfigError(f"profiles.{name}.base: unknown profile {base_name!r} (known: {known})")
        out[name] = profile_from_mapping(f"profiles.{name}", body, base)
        done.add(name)
        return out[name]

    for name in bodies:
        build(name, ())
    return MappingProxyType(out)


_LAYER_DEFAULTS = {f.name: f.default for f in fields(LayerSpec) if f.name not in ("name", "share")}


def policy_version_of(limits: Limits, layers: tuple[LayerSpec, ...], profiles: Mapping[str, Profile]) -> str:
    """A hash of what decides answers (limits, default layers, profiles), however the config spelled it: layer
    keys at their defaults and profiles equal to the built-in ones of their name are left out, as a config file
    that does not mention them (the default configuration hashes as it always has)."""
    data = {
        "limits": asdict(limits),
        "layers": [{k: v for k, v in asdict(layer).items() if _LAYER_DEFAULTS.get(k, object()) != v}
                   for layer in layers],
        "profiles": {name: profile_to_mapping(p) for name, p in sorted(profiles.items())
                     if BUILTIN_PROFILES.get(name) != p},
    }
    canonical = json.dumps(data, sort_keys=True, default=str)
    return "policy-" + hashlib.sha256(canonical.encode()).hexdigest()[:12]


# Set by a supervisor for the workers it starts (a file they lock around each stdout decision-log line), not by
# users: a process channel, so not a key of ENV_KEYS.
DECISION_LOG_LOCK_ENV = "MEMRANK_DECISION_LOG_LOCK"


def decision_log_lock(env: Mapping[str, str] | None = None) -> str | None:
    """The lock file this process's stdout decision log shares with its supervisor's other workers, else None."""
    return (os.environ if env is None else env).get(DECISION_LOG_LOCK_ENV) or None


def config_file(path: str | None, env: Mapping[str, str]) -> tuple[str, str] | None:
    """The config file in force and what named it ("--config" or "MEMRANK_CONFIG"): the flag wins."""
    if path:
        return path, "--config"
    from_env = env.get("MEMRANK_CONFIG")
    return (from_env, "MEMRANK_CONFIG") if from_env else None


def load_settings(
    path: str | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Load the effective settings: built-in defaults < file < env < overrides (dotted keys)."""
    env = os.environ if env is None else env
    named = config_file(path, env)
    file = FileSource(ConfigFile, named[0] if named else None)
    variables = EnvSource(ConfigFile, env)
    flags = {dotted: value for dotted, value in (overrides or {}).items() if value is not None}
    sources: tuple[PydanticBaseSettingsSource, ...] = (  # the first one's keys win
        InitSettingsSource(ConfigFile, nest(flags)), variables, file,
        InitSettingsSource(ConfigFile, builtin_defaults()),
    )
    try:
        # mypy sees the fields' __init__ (pydantic's dataclass_transform), not BaseSettings' own
        config = ConfigFile(_build_sources=(sources, {}))  # type: ignore[call-arg]
    except ValidationError as exc:
        raise config_error(exc, file.data, {k: t for k, t in variables.text.items() if k not in flags}) from None
    layers = tuple(LayerSpec(**asdict(layer)) for layer in config.layers)
    profiles = _profiles(config.profiles)
    _check_shadow_profile(config.shadow, profiles)
    return Settings(
        server=config.server, limits=config.limits, security=config.security, layers=layers, profiles=profiles,
        policy_version=policy_version_of(config.limits, layers, profiles), drift=config.drift,
        decision_log=config.decision_log, tracing=config.tracing, shadow=config.shadow,
    )


def _check_shadow_profile(shadow: ShadowSettings, profiles: Mapping[str, Profile]) -> None:
    """shadow.profile names a profile of the configuration (built-in or the file's)."""
    if shadow.profile is not None and shadow.profile not in profiles:
        raise ConfigError(f"shadow.profile: unknown profile {shadow.profile!r} (known: {', '.join(sorted(profiles))})")


@dataclass(frozen=True)
class SettingsSource:
    """Where settings come from (picklable, so worker processes can load the same settings)."""

    path: str | None = None
    overrides: tuple[tuple[str, Any], ...] = ()

    def load(self) -> Settings:
        """Load the settings this source describes."""
        return load_settings(self.path, overrides=dict(self.overrides))

    def origins(self, flag_names: Mapping[str, str], env: Mapping[str, str] | None = None) -> list[str]:
        """What the settings are loaded from, in the order ``load_settings`` applies them (each later one
        wins): names only, never a value (some are secrets' paths). ``flag_names``: a dotted key's flag."""
        env = os.environ if env is None else env
        variables = [var for var in ENV_KEYS if var in env]
        file = config_file(self.path, env)
        return (["built-in defaults"]
                + ([f"file {file[0]} ({file[1]})"] if file else [])
                + ([f"env {', '.join(variables)}"] if variables else [])
                + ([f"flags {', '.join(flag_names.get(k, k) for k, _ in self.overrides)}"] if self.overrides
                   else []))
