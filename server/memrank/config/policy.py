"""A config file's policy alone: its limits, layers and profiles, what the policy version hashes.

`memrank tune --config` and `memrank promote` read the config the pods serve
for its profiles. Its other sections may lean on what the pods' environment
supplies (``decision_log.content: hash`` needs ``MEMRANK_DECISION_LOG_HASH_KEY_FILE``,
a file sink a writable path), which a tuning job does not have and does not
need: those sections are left out, the rest is loaded and checked by
``load_settings`` as the server would, without the environment.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import yaml

from memrank.config import load_settings
from memrank.config.settings import Settings
from memrank.core.errors import ConfigError

POLICY_KEYS = ("limits", "layers", "profiles")  # what policy_version_of hashes


def load_policy_text(text: str) -> Settings:
    """The settings of the text's policy keys over the built-in defaults; ConfigError naming the key."""
    try:
        doc = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"not YAML: {exc}") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"expected a mapping of sections, got {type(doc).__name__}")
    policy = {k: doc[k] for k in POLICY_KEYS if k in doc}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "memrank.yaml"
        path.write_text(yaml.safe_dump(policy), encoding="utf-8")
        return load_settings(str(path), env={})


def load_policy(path: str | None) -> Settings:
    """``load_policy_text`` of the file (None: the built-in defaults alone)."""
    if path is None:
        return load_settings(None, env={})
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{exc.strerror or exc}") from None
    return load_policy_text(text)
