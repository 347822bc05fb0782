"""The reranker signal in memrank_signal_value (the drift histograms' input), from a live in-process server."""

from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from memrank.client import RankingClient
from memrank.grpc.server import create_server
from memrank.metrics.registry import new_registry
from tests.support.servers import loopback_settings


def _samples(text: str, name: str, **labels: str) -> float:
    return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples
               if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))


def test_reranker_values_are_recorded_raw_and_normalized() -> None:
    registry = new_registry()
    running = create_server(loopback_settings(), registry)
    try:
        cands = [{"id": f"m{i}", "content": f"note {w}", "retrievalScore": 0.5, "rerankerScore": s}
                 for i, (w, s) in enumerate([("alpha", 1.0), ("bravo", 2.0), ("charlie", 3.0)])]
        cands.append({"id": "gated", "content": "x", "rerankerScore": 9.0, "safety": "SAFETY_STATUS_UNSAFE"})
        with RankingClient(f"127.0.0.1:{running.port}", timeout=10) as client:
            client.rank({"query": "zulu", "profile": "with-reranker", "explicitLookup": True, "candidates": cands})
        text = generate_latest(registry).decode()
    finally:
        running.stop(0)
    for form in ("raw", "normalized"):
        labels = {"signal": "reranker", "form": form, "profile": "with-reranker"}
        # The three that passed the gates; their values are 1 / (1 + e^-z) of z = -a, 0, +a, which sum to 1.5.
        assert _samples(text, "memrank_signal_value_count", **labels) == 3
        assert abs(_samples(text, "memrank_signal_value_sum", **labels) - 1.5) < 1e-9
