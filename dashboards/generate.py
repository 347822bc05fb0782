"""Generate memrank's Grafana dashboard with grafana-foundation-sdk.

    python dashboards/generate.py            # write helm/memrank/files/memrank-dashboard.json
    python dashboards/generate.py --check    # exit 1 if the committed JSON differs from what this makes

The Helm chart ships the JSON in a ConfigMap for Grafana's dashboard sidecar.
Signal names are never listed here: the signal heatmaps repeat over the
`signal` variable, whose values come from the metrics themselves.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path
from typing import Any

from grafana_foundation_sdk.builders import common as cb
from grafana_foundation_sdk.builders import dashboard as db
from grafana_foundation_sdk.builders import gauge, heatmap, prometheus, stat, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common as cm
from grafana_foundation_sdk.models import dashboard as dm
from grafana_foundation_sdk.models import heatmap as hm_model
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

OUTPUT = Path(__file__).resolve().parent.parent / "helm" / "memrank" / "files" / "memrank-dashboard.json"
UID = "memrank-overview"
DS = dm.DataSourceRef(type_val="prometheus", uid="${datasource}")
RI = "$__rate_interval"
P = 'profile=~"$profile"'
PSI_WATCH, PSI_ACT = 0.1, 0.25  # memrank.metrics.drift.PSI_WATCH / PSI_ACT


def query(expr: str, legend: str = "", ref: str = "A", fmt: PromQueryFormat | None = None) -> prometheus.Dataquery:
    """A Prometheus range query."""
    q = prometheus.Dataquery().expr(expr).ref_id(ref).range().datasource(DS)
    if legend:
        q = q.legend_format(legend)
    return q.format(fmt) if fmt is not None else q


def thresholds(*steps: tuple[float | None, str]) -> db.ThresholdsConfig:
    """Absolute thresholds; the first step's value is None (-Infinity)."""
    return db.ThresholdsConfig().mode(dm.ThresholdsMode.ABSOLUTE).steps(
        [dm.Threshold(value=v, color=c) for v, c in steps])


PSI_STEPS = thresholds((None, "green"), (PSI_WATCH, "yellow"), (PSI_ACT, "red"))


def series(title: str, description: str, unit: str, *targets: prometheus.Dataquery, w: int = 12
           ) -> timeseries.Panel:
    """A time-series panel."""
    panel = timeseries.Panel().title(title).description(description).unit(unit).datasource(DS).height(8).span(w)
    for t in targets:
        panel = panel.with_target(t)
    return panel.legend(cb.VizLegendOptions().display_mode(cm.LegendDisplayMode.LIST)
                        .placement(cm.LegendPlacement.BOTTOM).show_legend(True))


def traffic() -> list[Any]:
    """Request rate, errors, latency and request size."""
    return [
        series("Request rate", "RPCs per second by method and status code.", "reqps",
               query(f"sum by (method, code) (rate(memrank_requests_total[{RI}]))", "{{method}} {{code}}")),
        stat.Panel().title("Error ratio").description("Share of RPCs answered with a non-OK status.")
        .unit("percentunit").datasource(DS).height(8).span(4)
        .thresholds(thresholds((None, "green"), (0.01, "yellow"), (0.05, "red")))
        .with_target(query(f'sum(rate(memrank_requests_total{{code!="OK"}}[{RI}])) '
                           f"/ sum(rate(memrank_requests_total[{RI}]))")),
        series("Rank latency", "Server time of Rank: p50, p90, p99.", "s",
               *(query(f"histogram_quantile({q}, sum by (le) (rate(memrank_rank_duration_seconds_bucket[{RI}])))",
                       f"p{int(q * 100)}", ref) for q, ref in ((0.5, "A"), (0.9, "B"), (0.99, "C"))), w=8),
        series("Candidates per request", "Candidates in a Rank call: median and p99.", "short",
               *(query(f"histogram_quantile({q}, sum by (le) (rate(memrank_request_candidates_bucket[{RI}])))",
                       f"p{int(q * 100)}", ref) for q, ref in ((0.5, "A"), (0.99, "B"))), w=12),
    ]


def signals() -> list[Any]:
    """One heatmap per signal (repeated over $signal) of raw or normalized values."""
    hm = (heatmap.Panel().title("Signal $signal ($form)")
          .description("Distribution of the signal's values over candidates that passed the gates (buckets of 0.1).")
          .datasource(DS).height(8).span(8).repeat("signal").repeat_direction("h")
          .calculate(False).y_axis(heatmap.YAxisConfig().unit("short").min(0))
          .color(heatmap.HeatmapColorOptions().mode(hm_model.HeatmapColorMode.SCHEME).scheme("Oranges")
                 .scale(hm_model.HeatmapColorScale.EXPONENTIAL).exponent(0.5))
          .with_target(query(f'sum by (le) (increase(memrank_signal_value_bucket{{signal="$signal", form="$form", '
                             f'{P}}}[{RI}]))', "{{le}}", fmt=PromQueryFormat.HEATMAP)))
    return [hm]


def drift() -> list[Any]:
    """Per-replica drift gauges and the fleet-wide recording rule."""
    return [
        gauge.Panel().title("Signal drift PSI (worst replica)")
        .description("memrank_signal_drift_psi: sliding window vs reference, per signal. "
                     "< 0.1 stable, 0.1-0.25 watch, >= 0.25 act.")
        .datasource(DS).height(8).span(8).min(0).max(1).unit("none").decimals(3).thresholds(PSI_STEPS)
        .with_target(query(f"max by (signal) (memrank_signal_drift_psi{{{P}}})", "{{signal}}")),
        series("Signal drift JS (worst replica)", "memrank_signal_drift_js: Jensen-Shannon divergence in bits "
               "(0 same, 1 disjoint), per signal.", "none",
               query(f"max by (signal) (memrank_signal_drift_js{{{P}}})", "{{signal}}"), w=8),
        series("Fleet drift PSI vs 7 days ago", "Recording rule memrank:signal_drift_psi:offset7d: bucket shares "
               "of the last hour, all replicas, against the same hour a week earlier.", "none",
               query(f"memrank:signal_drift_psi:offset7d{{{P}}}", "{{signal}} ({{profile}})"), w=8)
        .thresholds(PSI_STEPS).thresholds_style(cb.GraphThresholdsStyleConfig().mode(
            cm.GraphTresholdsStyleMode.LINE)),
    ]


def selection() -> list[Any]:
    """Selected and dropped candidates, empty answers, the winner's margin, budget use."""
    return [
        series("Selected per second by layer", "Candidates selected by Rank, by layer.", "short",
               query(f"sum by (layer) (rate(memrank_selected_total{{{P}}}[{RI}]))", "{{layer}}"), w=8),
        series("Drops by reason", "Candidates dropped, by reason.", "short",
               query(f"sum by (reason) (rate(memrank_dropped_total[{RI}]))", "{{reason}}"), w=8),
        series("Selection ratio and empty answers", "Selected / received candidates, and the share of calls "
               "with candidates that selected none.", "percentunit",
               query(f"sum(rate(memrank_selected_total{{{P}}}[{RI}])) / sum(rate(memrank_candidates_total{{{P}}}"
                     f"[{RI}]))", "selected / received"),
               query(f"sum(rate(memrank_nothing_selected_total{{{P}}}[{RI}])) / (sum(rate("
                     f"memrank_request_candidates_count[{RI}])) - sum(rate(memrank_request_candidates_bucket"
                     f'{{le=~"0|0\\\\.0"}}[{RI}])))', "nothing selected", "B"), w=8),
        series("Top margin", "Final-score gap between rank 1 and rank 2: median and p10 (small = a near tie).",
               "none", *(query(f"histogram_quantile({q}, sum by (le) (rate(memrank_top_margin_bucket[{RI}])))",
                               f"p{int(q * 100)}", ref) for q, ref in ((0.5, "A"), (0.1, "B")))),
        series("Budget utilisation by layer", "Used / budget tokens per layer in calls with a token budget: "
               "median and p90.", "percentunit",
               *(query(f"histogram_quantile({q}, sum by (layer, le) (rate("
                       f"memrank_layer_budget_utilization_ratio_bucket[{RI}])))", f"{{{{layer}}}} p{int(q * 100)}",
                       ref) for q, ref in ((0.5, "A"), (0.9, "B")))),
    ]


def decision_log() -> list[Any]:
    """Records written to the decision log, and those not written, by reason."""
    return [
        series("Decision log records written", "Records written per second, by kind (decision, feedback), and "
               "the decisions decision_log.sample_rate left out (sampled out, by design); only with "
               "decision_log.enabled.", "short",
               query(f"sum by (kind) (rate(memrank_decision_log_records_total[{RI}]))", "{{kind}}"),
               query(f"sum(rate(memrank_decision_log_dropped_total{{reason=\"sampled_out\"}}[{RI}]))",
                     "sampled out", "B")),
        series("Decision log drops by reason", "Records not written per second, by reason. Refused (the call "
               "answered decision_logged=false): queue_full (the writer fell decision_log.queue_size behind), "
               "writer_down (a dead writer being replaced), closed (after shutdown began). Lost after a true "
               "answer: lost_after_ack (a writer died with records in flight, or shutdown ran out of time), "
               "write_error (a record that could not be formatted), upload_failed and buffer_full (sink s3: an "
               "object that failed every retry; uploads failing with the writer's buffer full). Each is a call "
               "whose record is missing from "
               "the log; 0 when none. Decisions left out by decision_log.sample_rate (reason sampled_out, by "
               "design) are not drawn here.", "short",
               query(f"sum by (reason) (rate(memrank_decision_log_dropped_total{{reason!=\"sampled_out\"}}[{RI}]))",
                     "{{reason}}")),
        series("Decision log records lost after a true answer", "Records whose call answered "
               "decision_logged=true and that never reached the log, in each interval, by reason (lost_after_ack, "
               "write_error, upload_failed, buffer_full): the answers this log contradicts. Alert "
               "MemrankDecisionLogLostAfterTrue fires on any. 0 when none.", "short",
               query(f"sum by (reason) (increase(memrank_decision_log_dropped_total{{reason=~\"lost_after_ack|"
                     f"write_error|upload_failed|buffer_full\"}}[{RI}]))", "{{reason}}")),
        series("Decision log sink failures", "Failed attempts per second to open or write the log's sink, by "
               "error (ENOSPC: disk full, EROFS: read-only, EPERM/EACCES: not writable; sink s3: the S3 error "
               "code, or EndpointConnectionError). The writer keeps the record and retries with back-off; while it "
               "fails, records queue, then are refused (queue_full). "
               "0 when none.", "short",
               query(f"sum by (error) (rate(memrank_decision_log_write_failures_total[{RI}])) or on() vector(0)",
                     "{{error}}")),
    ]


def shadow() -> list[Any]:
    """The shadow profile's agreement with the served one, and its feedback win rate (docs/how-to/shadow.md)."""
    pair = "{{profile}} vs {{shadow_profile}}"
    return [
        series("Shadow overlap@k", "Calls with a shadow profile (shadow.profile, or the caller's shadow_profile): "
               "|top-k(served) ∩ top-k(shadow)| / k, k = the served selection's size; median and p10 by profile "
               "pair. 1 = the shadow selects the same memories.", "percentunit",
               *(query(f"histogram_quantile({q}, sum by (profile, shadow_profile, le) (rate("
                       f"memrank_shadow_overlap_at_k_bucket{{{P}}}[{RI}])))", f"{pair} p{int(q * 100)}", ref)
                 for q, ref in ((0.5, "A"), (0.1, "B"))), w=8),
        series("Shadow Kendall tau", "Kendall tau of the served and the shadow order over the memories both "
               "selected (calls sharing two or more); median and p10 by profile pair. 1 = same order, -1 = "
               "reversed.", "none",
               *(query(f"histogram_quantile({q}, sum by (profile, shadow_profile, le) (rate("
                       f"memrank_shadow_kendall_tau_bucket{{{P}}}[{RI}])))", f"{pair} p{int(q * 100)}", ref)
                 for q, ref in ((0.5, "A"), (0.1, "B"))), w=8),
        series("Feedback win rate by profile", "From `memrank shadow-report --prometheus` over the decision log "
               "(node_exporter's textfile collector or a Pushgateway): of the shadowed decisions with feedback, "
               "the share whose served or shadow selection held the relevant memories better (larger DCG), or "
               "tied. Empty until the report runs.", "percentunit",
               query(f"max by (profile, shadow_profile, winner) (memrank_shadow_feedback_win_rate{{{P}}})",
                     f"{pair}: {{{{winner}}}}"), w=8),
    ]


def variables() -> list[Any]:
    """Datasource, profile, signal and form."""
    return [
        db.DatasourceVariable("datasource").label("Data source").type("prometheus"),
        db.QueryVariable("profile").label("Profile").datasource(DS).query("label_values(memrank_candidates_total, "
                                                                           "profile)")
        .multi(True).include_all(True).all_value(".*").refresh(dm.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(dm.VariableSort.ALPHABETICAL_ASC),
        db.QueryVariable("signal").label("Signal").datasource(DS)
        .query("label_values(memrank_signal_value_bucket, signal)").multi(True).include_all(True)
        .refresh(dm.VariableRefresh.ON_TIME_RANGE_CHANGED).sort(dm.VariableSort.ALPHABETICAL_ASC),
        db.CustomVariable("form").label("Form").values("raw,normalized")
        .current(dm.VariableOption(selected=True, text="raw", value="raw")),
    ]


def build() -> dict[str, Any]:
    """The dashboard as plain JSON data."""
    board = (db.Dashboard("memrank").uid(UID).tags(["memrank"]).editable().refresh("30s").time("now-6h", "now")
             .timezone("browser").tooltip(dm.DashboardCursorSync.CROSSHAIR)
             .description("memrank sidecars: traffic, signal distributions and drift, selection, budgets, the "
                          "decision log, the shadow profile."))
    for v in variables():
        board = board.with_variable(v)
    for title, panels in (("Traffic", traffic()), ("Signal distributions", signals()), ("Drift", drift()),
                          ("Selection and budgets", selection()), ("Decision log", decision_log()),
                          ("Shadow", shadow())):
        board = board.with_row(db.Row(title))
        for panel in panels:
            board = board.with_panel(panel)
    data: dict[str, Any] = json.loads(json.dumps(board.build(), cls=JSONEncoder))
    return data


def render() -> str:
    """The dashboard JSON text, stable byte for byte."""
    return json.dumps(build(), indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the dashboard, or with --check compare it with the committed file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the committed JSON is out of date")
    parser.add_argument("--output", type=Path, default=OUTPUT, help=f"where to write (default {OUTPUT})")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            diff = difflib.unified_diff(current.splitlines(), text.splitlines(), "committed", "generated",
                                        lineterm="", n=1)
            print(f"{args.output} is out of date; run python dashboards/generate.py", file=sys.stderr)
            print("\n".join(list(diff)[:60]), file=sys.stderr)
            return 1
        print(f"{args.output} is up to date")
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
