"""The whole effective configuration (``Settings``), written back as a config file's data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import yaml

from memrank.config.keys import read_key
from memrank.config.sections import (
    DEFAULT_DECISION_LOG,
    DEFAULT_DRIFT,
    DEFAULT_SHADOW,
    DEFAULT_TRACING,
    DecisionLogSettings,
    DriftSettings,
    Limits,
    SecuritySettings,
    ServerSettings,
    ShadowSettings,
    TracingSettings,
)
from memrank.core.batch import LayerSpec
from memrank.core.profile import Profile
from memrank.profiles.model import profile_to_mapping


@dataclass(frozen=True)
class Settings:
    """The whole effective configuration."""

    server: ServerSettings
    limits: Limits
    security: SecuritySettings
    layers: tuple[LayerSpec, ...]
    profiles: Mapping[str, Profile]
    policy_version: str
    drift: DriftSettings = DEFAULT_DRIFT
    decision_log: DecisionLogSettings = DEFAULT_DECISION_LOG
    tracing: TracingSettings = DEFAULT_TRACING
    shadow: ShadowSettings = DEFAULT_SHADOW

    def provenance_key(self) -> bytes | None:
        """The provenance HMAC key, read from its file (None when not configured)."""
        return read_key("security.provenance_key_file", self.security.provenance_key_file)

    def receipt_key(self) -> bytes | None:
        """The receipt HMAC key, read from its file (None when not configured)."""
        return read_key("security.receipt_key_file", self.security.receipt_key_file)

    def as_dict(self) -> dict[str, Any]:
        """The effective configuration as a config file's data: ``load_settings`` of it gives these settings again
        (every profile in full, built-in ones included; the policy version is derived, so not a key)."""
        return {
            "server": asdict(self.server),
            "limits": asdict(self.limits),
            "security": asdict(self.security),
            "drift": asdict(self.drift),
            "decision_log": asdict(self.decision_log),
            "tracing": asdict(self.tracing),
            "shadow": asdict(self.shadow),
            "layers": [asdict(layer) for layer in self.layers],
            "profiles": {name: profile_to_mapping(p) for name, p in sorted(self.profiles.items())},
        }

    def to_yaml(self) -> str:
        """``--print-config``: ``as_dict`` as YAML, headed by the policy version as a comment."""
        header = f"# memrank effective configuration; policy_version {self.policy_version}\n"
        return header + str(yaml.safe_dump(self.as_dict(), sort_keys=False))
