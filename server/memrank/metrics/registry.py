"""Where metrics are kept: a registry per server, or one that reads a supervisor's workers' files.

The rest of the package names prometheus_client only through here (and the other ``metrics`` modules).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, multiprocess

from memrank.metrics.signal_values import WorkersSignalValues

Registry = CollectorRegistry


def new_registry() -> Registry:
    """An empty registry (one server's metrics)."""
    return CollectorRegistry()


def workers_registry(directory: str) -> Registry:
    """A registry that reads the samples the workers write under ``directory`` (prometheus_client's
    multiprocess mode, and memrank's signal histogram tables): counters and histograms summed, drift gauges at
    their live maximum."""
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
    WorkersSignalValues(registry, directory)
    return registry


def worker_gone(pid: int, directory: str) -> None:
    """Forget a dead worker's live gauges (its counters and signal histogram stay counted)."""
    multiprocess.mark_process_dead(pid, directory)  # type: ignore[no-untyped-call]
