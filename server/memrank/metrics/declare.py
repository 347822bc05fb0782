"""Metric declarations, made once against an injected registry.

Label values are bounded: ``profile`` takes configured profile names,
``layer`` configured layer names plus ``other``, ``signal`` the signal names
of the configured profiles, ``reason`` the DropReason names, ``code`` gRPC
status names. Never ids, never text.

With several worker processes (prometheus-client multiprocess mode) counters
and histograms are summed over workers; the drift gauges use ``livemax``:
the largest value any live worker holds, since PSI/JS of one worker's window
cannot be added to another's (fleet-wide drift comes from the recording rules).
``memrank_signal_value`` is a collector of memrank's own (``signal_values``),
filled a call at a time; a worker keeps it in a file in ``worker_dir`` that
the supervisor sums in the same way.
"""

from __future__ import annotations

from typing import Final, Literal

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from memrank.metrics.signal_values import SignalValues

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
CANDIDATE_BUCKETS = (0, 1, 5, 10, 25, 50, 100, 200, 400, 800, 1600)
UTILIZATION_BUCKETS = (0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 1.0)
MARGIN_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
# overlap@k is a fraction m/k of small k (1/3, 2/3, 3/4, 4/5, ...); tau runs over [-1, 1]
OVERLAP_BUCKETS = (0.0, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)
TAU_BUCKETS = (-1.0, -0.5, 0.0, 0.25, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)
GAUGE_MODE: Final[Literal["livemax"]] = "livemax"


class Metrics:
    """Every memrank metric, registered on ``registry``; ``worker_dir``: a supervisor's worker, whose signal
    histogram is kept in a file there (the supervisor's metrics directory)."""

    def __init__(self, registry: CollectorRegistry, worker_dir: str | None = None) -> None:
        r = registry
        self.requests = Counter("memrank_requests", "RPCs handled, by method and status code.",
                                ("method", "code"), registry=r)
        self.rank_duration = Histogram(
            "memrank_rank_duration_seconds", "Server time of one Rank call, validation to response.",
            buckets=LATENCY_BUCKETS, registry=r,
        )
        # memrank_signal_value, labels signal, form, profile, layer: filled a call at a time (see signal_values)
        self.signal_value = SignalValues(r, worker_dir)
        self.candidates = Counter("memrank_candidates", "Candidates received by Rank.", ("profile", "layer"),
                                  registry=r)
        self.selected = Counter("memrank_selected", "Candidates selected by Rank.", ("profile", "layer"),
                                registry=r)
        self.dropped = Counter("memrank_dropped", "Candidates dropped by Rank, by drop reason.", ("reason",),
                               registry=r)
        self.nothing_selected = Counter(
            "memrank_nothing_selected", "Rank calls with at least one candidate that selected none.",
            ("profile",), registry=r,
        )
        self.request_candidates = Histogram("memrank_request_candidates", "Candidates per Rank call.",
                                            buckets=CANDIDATE_BUCKETS, registry=r)
        self.layer_utilization = Histogram(
            "memrank_layer_budget_utilization_ratio", "Used / budget tokens of a layer, per Rank call with a budget.",
            ("layer",), buckets=UTILIZATION_BUCKETS, registry=r,
        )
        self.top_margin = Histogram(
            "memrank_top_margin", "Final-score gap between rank 1 and rank 2 (calls selecting two or more).",
            buckets=MARGIN_BUCKETS, registry=r,
        )
        self.drift_psi = Gauge(
            "memrank_signal_drift_psi", "PSI of a signal's raw values, sliding window vs reference.",
            ("signal", "profile"), multiprocess_mode=GAUGE_MODE, registry=r,
        )
        self.drift_js = Gauge(
            "memrank_signal_drift_js", "Jensen-Shannon divergence (base 2) of a signal's raw values, window vs "
            "reference.", ("signal", "profile"), multiprocess_mode=GAUGE_MODE, registry=r,
        )

        self.decision_log_records = Counter(
            "memrank_decision_log_records", "Records written to the decision log, by kind (decision, feedback).",
            ("kind",), registry=r,
        )
        self.decision_log_dropped = Counter(
            "memrank_decision_log_dropped", "Decision log records not written, by reason. Refused, the "
            "call answered decision_logged=false: queue_full, writer_down (a dead writer being replaced), closed "
            "(handed over after shutdown began). Lost after the call answered true: lost_after_ack (taken by a "
            "writer that died, or still queued when shutdown ran out of time), write_error (a record that could not "
            "be formatted), upload_failed (sink s3: its object failed every retry), buffer_full (sink s3: uploads "
            "failing and decision_log.s3_buffer_bytes held). sampled_out: a decision left out by "
            "decision_log.sample_rate, by design.", ("reason",),
            registry=r,
        )
        self.decision_log_write_failures = Counter(
            "memrank_decision_log_write_failures", "Failed attempts to open or write the decision log's sink, by "
            "error (errno name: ENOSPC, EROFS, EPERM, ...). The writer keeps the record and retries (back-off up to "
            "1 s) until the sink takes it; meanwhile the queue fills and further records are refused (queue_full). "
            "Sink s3: failed uploads, by S3 error code or botocore error (AccessDenied, NoSuchBucket, "
            "EndpointConnectionError), retried decision_log.s3_retries times.",
            ("error",), registry=r,
        )
        self.config_reloads = Counter(
            "memrank_config_reloads", "Profile reloads (SIGHUP or a changed config file), by result: ok (new "
            "profiles serving), unchanged (nothing to change), error (refused; the old profiles keep serving).",
            ("result",), registry=r,
        )
        self.policy_info = Gauge(
            "memrank_policy_info", "1 for the policy version (layers, limits and profiles) this server serves; 0 "
            "for one it served before a reload.", ("policy_version",), multiprocess_mode=GAUGE_MODE, registry=r,
        )
        self.shadow_overlap = Histogram(
            "memrank_shadow_overlap_at_k", "Rank calls with a shadow profile (the server's or the caller's): "
            "|top-k(served) ∩ top-k(shadow)| / k, k = the served selection's size (1 when both are empty).",
            ("profile", "shadow_profile"), buckets=OVERLAP_BUCKETS, registry=r,
        )
        self.shadow_kendall_tau = Histogram(
            "memrank_shadow_kendall_tau", "Rank calls with a shadow profile whose two selections share two or more "
            "memories: Kendall tau of the served and the shadow order over the memories both selected (no ties: "
            "tau-a = tau-b). Fewer in common: not observed (compare the overlap histogram's count). No _sum: tau "
            "can be negative (OpenMetrics); quantiles come from the buckets.",
            ("profile", "shadow_profile"), buckets=TAU_BUCKETS, registry=r,
        )
        self.feedback_labels = Counter(
            "memrank_feedback_labels", "Feedback labels received by RecordFeedback, by relevance grade (0-3).",
            ("relevance",), registry=r,
        )

        self.send_timeouts = Counter(
            "memrank_send_timeouts", "Connections closed because a RankingService response had not left "
            "server.response_send_timeout_seconds after its handler answered (a client that does not read), by the "
            "method of that call; the other calls on the connection end with it.",
            ("method",), registry=r,
        )
        self.feature_memo_hits = Counter(
            "memrank_feature_memo_hits", "Rank candidates whose own features (statement, injection patterns, "
            "importance rules) the worker's feature memo held (server.feature_memo_bytes).", registry=r,
        )
        self.feature_memo_misses = Counter(
            "memrank_feature_memo_misses", "Rank candidates whose own features the feature memo did not hold: "
            "computed, then stored. Hit ratio: hits / (hits + misses).", registry=r,
        )
        self.unsent_refusals = Counter(
            "memrank_unsent_refusals", "RankingService calls refused with RESOURCE_EXHAUSTED because their connection "
            "held more than server.max_unsent_bytes_per_connection of responses not yet sent (a client that does "
            "not read), by method; the calls of other connections go on.",
            ("method",), registry=r,
        )

        self._requests: dict[tuple[str, str], Counter] = {}  # requests' children by (method, code), see observe_call

    def observe_feature_memo(self, hits: int, misses: int) -> None:
        """Count one batch's lookups in the feature memo."""
        if hits:
            self.feature_memo_hits.inc(hits)
        if misses:
            self.feature_memo_misses.inc(misses)

    def observe_unsent_refusal(self, method: str) -> None:
        """Count one call refused because its connection holds too many responses not yet sent."""
        self.unsent_refusals.labels(method=method).inc()

    def observe_send_timeout(self, method: str) -> None:
        """Count one connection closed because a response did not leave in time."""
        self.send_timeouts.labels(method=method).inc()

    def observe_call(self, method: str, code: str, seconds: float | None = None) -> None:
        """Count one RPC and, for Rank, its duration (the counter's child kept: labels() costs more than inc)."""
        child = self._requests.get((method, code))
        if child is None:
            child = self._requests.setdefault((method, code), self.requests.labels(method=method, code=code))
        child.inc()
        if seconds is not None and method == "Rank":
            self.rank_duration.observe(seconds)
