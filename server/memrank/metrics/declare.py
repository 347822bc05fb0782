"""Metric declarations, made once against an injected registry."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class Metrics:
    """Every memrank metric, registered on ``registry``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "memrank_requests", "RPCs handled, by method and status code.", ("method", "code"), registry=registry
        )
        self.rank_duration = Histogram(
            "memrank_rank_duration_seconds", "Server time of one Rank call, validation to response.",
            buckets=LATENCY_BUCKETS, registry=registry,
        )

    def observe_call(self, method: str, code: str, seconds: float | None = None) -> None:
        """Count one RPC and, for Rank, its duration."""
        self.requests.labels(method=method, code=code).inc()
        if seconds is not None and method == "Rank":
            self.rank_duration.observe(seconds)
