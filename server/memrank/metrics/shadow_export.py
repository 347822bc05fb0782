"""``memrank shadow-report --prometheus``: the feedback win rates as Prometheus text, for node_exporter's
textfile collector or a Pushgateway (the report runs offline, over the decision log; no server holds them)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

# (served profile, shadow profile, winner, decisions, rate) of each pair and winner
Row = tuple[str, str, str, int, float]


class _Rows:
    """A collector of the report's rows (read once, at the exposition)."""

    def __init__(self, rows: Sequence[Row]) -> None:
        self._rows = rows

    def collect(self) -> Iterator[Metric]:
        labels = ("profile", "shadow_profile", "winner")
        count = GaugeMetricFamily(
            "memrank_shadow_feedback_decisions", "Decisions with a shadow and feedback compared by "
            "`memrank shadow-report`, by the selection with the larger DCG of the feedback's grades (tie: equal).",
            labels=labels)
        rate = GaugeMetricFamily(
            "memrank_shadow_feedback_win_rate", "Share of a profile pair's compared decisions each side won "
            "(served, shadow) or tied, from `memrank shadow-report`.", labels=labels)
        for profile, shadow, winner, decisions, share in self._rows:
            count.add_metric([profile, shadow, winner], decisions)
            rate.add_metric([profile, shadow, winner], share)
        yield count
        yield rate


def exposition(rows: Iterable[Row]) -> bytes:
    """The rows as Prometheus text exposition."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Rows(tuple(rows)))
    return generate_latest(registry)
