"""The clients' gRPC service config: the shipped ``service_config.json`` (a copy of ``clients/service_config.json``,
the one file every memrank client loads), with ``retries`` and ``backoff`` mapped onto its ``retryPolicy``."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from importlib import resources
from typing import Any

import grpc
import grpc.aio

RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE})  # what the service config retries
MAX_ATTEMPTS = 5  # gRPC's cap on retryPolicy.maxAttempts (gRFC A6): more is treated as 5
# The least initialBackoff: with 1 ms, grpc C-core (1.85) loses about every other retry, and the call then waits for
# its deadline (grpc/grpc#41036); from 2 ms on it does not, here.
MIN_BACKOFF = 0.01
SERVICE_CONFIG_FILE = "service_config.json"


@functools.cache
def shipped_config() -> str:
    return resources.files(__package__ or "memrank.client").joinpath(SERVICE_CONFIG_FILE).read_text(encoding="utf-8")


def duration_of(seconds: float) -> str:
    """Seconds as a protobuf JSON Duration ("0.05s")."""
    text = f"{seconds:.9f}".rstrip("0").rstrip(".")
    return f"{text}s"


def seconds_of(duration: str) -> float:
    return float(duration.removesuffix("s"))


def service_config(retries: int | None = None, backoff: float | None = None) -> dict[str, Any]:
    """The gRPC service config the clients use: the shipped ``service_config.json``, with ``retries`` and
    ``backoff`` (when given) mapped onto every ``retryPolicy`` in it.

    ``retries`` n sets ``maxAttempts`` to min(n + 1, 5); 0 removes the retry policy (no call is retried).
    gRPC allows at most 5 attempts, so more retries than 4 cannot be honoured as such; what they asked for,
    riding out a longer outage, is what gRPC's wait-for-ready does: ``retries`` of 5 or more also set
    ``waitForReady``, so a call waits (up to its deadline) for a server that is not up yet instead of failing at
    once, and then retries UNAVAILABLE answers 4 times. ``backoff`` (seconds, > 0; below 10 ms counts as 10 ms,
    see MIN_BACKOFF) sets ``initialBackoff``, and raises ``maxBackoff`` to it when lower. The delay before retry
    k is random in [0, min(initialBackoff * backoffMultiplier^(k-1), maxBackoff)] (gRFC A6), and the call's
    deadline bounds all attempts together.
    """
    if retries is not None and retries < 0:
        raise ValueError(f"retries must be >= 0, got {retries}")
    if backoff is not None and not backoff > 0:
        raise ValueError(f"backoff must be > 0 seconds, got {backoff}")
    if backoff is not None:
        backoff = max(backoff, MIN_BACKOFF)
    config: dict[str, Any] = json.loads(shipped_config())
    for method in config.get("methodConfig", ()):
        policy = method.get("retryPolicy")
        if policy is None:
            continue
        if retries == 0:
            del method["retryPolicy"]
            continue
        if retries is not None:
            policy["maxAttempts"] = min(retries + 1, MAX_ATTEMPTS)
            if retries + 1 > MAX_ATTEMPTS:
                method["waitForReady"] = True
        if backoff is not None:
            policy["initialBackoff"] = duration_of(backoff)
            if seconds_of(policy["maxBackoff"]) < backoff:
                policy["maxBackoff"] = duration_of(backoff)
    return config


def retry_policy(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The retry policy of RankingService in a service config ({} when none)."""
    for method in config.get("methodConfig", ()):
        if any(n.get("service") == "memrank.v1.RankingService" and "method" not in n for n in method["name"]):
            return dict(method.get("retryPolicy", {}))
    return {}
