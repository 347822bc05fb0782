"""A tuned profile written into the config file the pods serve: the merge, and the proof that the result loads.

``memrank tune --out`` writes ``profiles: {tuned: {base, description,
signals}}``. Promoting it *as* a serving profile replaces that profile's
``signals`` (and ``description``) in the served config and keeps every other
key of its definition (base, threshold, diversity, ...) and every other key of
the file. A serving profile the file does not define yet (a built-in one, say
``default``) gets the tuned entry, without a ``base`` that would name itself.
The merged text's policy (limits, layers, profiles) is loaded by the server's
own settings loader before anything is written, so profiles the pods would
refuse are never written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from memrank.config.policy import load_policy_text
from memrank.core.errors import ConfigError

HEADER = "# memrank config; profiles.{name} last written by `memrank promote` (from {source})\n"


class PromotionError(ValueError):
    """The promotion cannot be done as asked; the message names the file, key or object and why."""


@dataclass(frozen=True)
class Merged:
    """The new config text, and the policy version the servers report before and after it."""

    text: str
    changed: bool
    before: str
    after: str


def tuned_entry(path: Path, profile: str) -> dict[str, Any]:
    """The ``profiles.<profile>`` mapping of a file `memrank tune` wrote."""
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise PromotionError(f"--from {path}: not YAML ({exc})") from None
    entry = (doc.get("profiles") or {}).get(profile) if isinstance(doc, dict) else None
    if not isinstance(entry, dict) or not isinstance(entry.get("signals"), list):
        known = ", ".join(sorted((doc.get("profiles") or {}) if isinstance(doc, dict) else ())) or "none"
        raise PromotionError(f"--from {path}: no profiles.{profile} with signals (profiles: {known}); "
                             f"--profile names the one `memrank tune --name` wrote")
    return entry


def merge(current: str, entry: dict[str, Any], name: str, source: str) -> Merged:
    """``current`` (the served config's text; "" for none) with profile ``name`` set from the tuned entry."""
    try:
        doc = yaml.safe_load(current) or {}
    except yaml.YAMLError as exc:
        raise PromotionError(f"the served config is not YAML ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("profiles") or {}, dict):
        raise PromotionError("the served config is not a mapping with a profiles: mapping")
    profiles = dict(doc.get("profiles") or {})
    existing = profiles.get(name)
    if isinstance(existing, dict):
        new = {**existing, "description": entry.get("description", ""), "signals": entry["signals"]}
    else:
        new = {k: v for k, v in entry.items() if not (k == "base" and v == name)}
    merged = {**doc, "profiles": {**profiles, name: new}}
    text = HEADER.format(name=name, source=source) + yaml.safe_dump(merged, sort_keys=False)
    before, after = policy_version(current, "the served config"), policy_version(text, "the promoted config")
    return Merged(text, merged != doc, before, after)


def policy_version(text: str, what: str) -> str:
    """The policy version a server loading this config text reports; PromotionError when its policy does not load
    (only limits, layers and profiles are judged: ``memrank.config.policy``)."""
    try:
        return load_policy_text(text).policy_version
    except ConfigError as exc:
        raise PromotionError(f"{what} does not load: {exc}") from None
