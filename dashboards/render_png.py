"""Render key panels of memrank's Grafana dashboard to a PNG, from what a Prometheus server holds.

    python dashboards/render_png.py --prometheus http://127.0.0.1:9090 --output dashboard.png \
        [--start UNIX --end UNIX | --minutes 15] [--step 1] [--rate-interval 30s] [--var profile=default]

No Grafana needed: the panels' queries are read from the dashboard JSON the chart ships
(helm/memrank/files/memrank-dashboard.json), the template variables are filled in
(`$__rate_interval` from --rate-interval, `$profile` `.*`, `$signal` the first signal the
metrics carry, `$form` `raw`, each overridable with --var), every query runs as a
/api/v1/query_range, and matplotlib (Agg) draws one subplot per panel, with the query's
legendFormat as the legend and the panel's thresholds as dashed lines.

tests/server/test_dashboard_data.py calls this script against a real Prometheus scraping
a loaded memrank; docs/dashboard.png is that test's picture, written with
`MEMRANK_DASHBOARD_PNG=docs/dashboard.png python -m pytest tests/server/test_dashboard_data.py`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

DASHBOARD = Path(__file__).resolve().parent.parent / "helm" / "memrank" / "files" / "memrank-dashboard.json"
KEY_PANELS = (
    "Request rate", "Rank latency",
    "Signal drift PSI (worst replica)", "Signal drift JS (worst replica)",
    "Fleet drift PSI vs 7 days ago", "Drops by reason",
    "Selection ratio and empty answers", "Budget utilisation by layer",
)
UNITS = {"reqps": ("req/s", 1.0), "s": ("ms", 1000.0), "percentunit": ("%", 100.0)}
LEGEND = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def panels(dashboard: Path = DASHBOARD) -> list[dict[str, Any]]:
    """Every panel with queries (rows left out), in dashboard order."""
    return [p for p in json.loads(dashboard.read_text(encoding="utf-8"))["panels"] if p.get("targets")]


def variables(dashboard: Path = DASHBOARD) -> list[dict[str, Any]]:
    """The dashboard's template variables."""
    found: list[dict[str, Any]] = json.loads(dashboard.read_text(encoding="utf-8"))["templating"]["list"]
    return found


def fill(expr: str, values: dict[str, str]) -> str:
    """``expr`` with each ``$name`` / ``${name}`` in ``values`` replaced; longest names first."""
    for name in sorted(values, key=len, reverse=True):
        expr = expr.replace("${" + name + "}", values[name]).replace("$" + name, values[name])
    if "$" in expr:
        raise ValueError(f"template variable left in {expr!r} (have {sorted(values)})")
    return expr


class Prometheus:
    """The few HTTP API calls needed, on the standard library."""

    def __init__(self, url: str, timeout: float = 10) -> None:
        self.url, self.timeout = url.rstrip("/"), timeout

    def get(self, path: str, params: dict[str, str] | list[tuple[str, str]]) -> Any:
        url = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=self.timeout) as resp:
                body = json.loads(resp.read())
        except urllib.error.HTTPError as exc:  # 400/422 carry the PromQL error in a JSON body
            body = json.loads(exc.read() or b"{}") or {"status": "error", "error": str(exc)}
        if body.get("status") != "success":
            raise ValueError(f"{path} {dict(params)}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        params = {"query": expr} | ({"time": f"{at:.3f}"} if at is not None else {})
        result: list[dict[str, Any]] = self.get("/api/v1/query", params)["result"]
        return result

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        params = {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
        result: list[dict[str, Any]] = self.get("/api/v1/query_range", params)["result"]
        return result

    def label_values(self, label: str, metric: str) -> list[str]:
        found: list[str] = self.get(f"/api/v1/label/{label}/values", [("match[]", metric)])
        return found


def legend(fmt: str | None, labels: dict[str, str]) -> str:
    """Grafana's legendFormat: ``{{name}}`` replaced by the series' label (empty when absent)."""
    if not fmt:
        return "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"
    return LEGEND.sub(lambda m: labels.get(m.group(1), ""), fmt)


def default_values(prom: Prometheus, rate_interval: str, overrides: dict[str, str]) -> dict[str, str]:
    """A value for each template variable: the override, else the all-value, else the first value."""
    values = {"__rate_interval": rate_interval, "__interval": rate_interval}
    for var in variables():
        name = var["name"]
        if var["type"] == "datasource":
            values[name] = "prometheus"
        elif var["type"] == "custom":
            values[name] = str(var.get("current", {}).get("value") or var["query"].split(",")[0])
        elif var["type"] == "query":
            m = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", var["query"])
            if var.get("allValue"):
                values[name] = var["allValue"]
            elif m:
                found = prom.label_values(m.group(2), m.group(1))
                values[name] = found[0] if found else ""
    return values | overrides


def render(prom: Prometheus, output: Path, start: float, end: float, step: float, values: dict[str, str],
           titles: tuple[str, ...] = KEY_PANELS) -> dict[str, int]:
    """Draw ``titles`` into ``output``; return the number of series each panel drew."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_title = {p["title"]: p for p in panels()}
    missing = [t for t in titles if t not in by_title]
    if missing:
        raise ValueError(f"no such panels in {DASHBOARD.name}: {missing}")
    cols = 2
    rows = (len(titles) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(11, 2.5 * rows), dpi=72, squeeze=False)
    drawn: dict[str, int] = {}
    for ax, title in zip(axes.flat, titles, strict=False):
        panel = by_title[title]
        unit, scale = UNITS.get(panel.get("fieldConfig", {}).get("defaults", {}).get("unit", ""), ("", 1.0))
        count = 0
        for target in panel["targets"]:
            for s in prom.query_range(fill(target["expr"], values), start, end, step):
                xs = [float(t) - start for t, _ in s["values"]]
                ys = [float(v) * scale for _, v in s["values"]]
                ax.plot(xs, ys, linewidth=1.2, label=legend(target.get("legendFormat"), s["metric"]))
                count += 1
        steps = panel.get("fieldConfig", {}).get("defaults", {}).get("thresholds", {}).get("steps", [])
        lines = [th for th in steps if th.get("value") is not None and panel["type"] in ("gauge", "timeseries")]
        for th in lines:
            ax.axhline(th["value"] * scale, color=th["color"], linestyle="--", linewidth=0.8)
        if lines and count and ax.get_ylim()[1] > 4 * max(th["value"] for th in lines) * scale:
            # PSI of a real shift can reach 10+: a log scale above the first threshold keeps 0.1 / 0.25 visible
            top = ax.get_ylim()[1]
            ax.set_yscale("symlog", linthresh=min(th["value"] for th in lines) * scale)
            ax.set_ylim(0, top * 1.5)
        ax.set_xlim(0, end - start)
        drawn[title] = count
        ax.set_title(title if count else f"{title} (no data)", fontsize=10)
        ax.set_ylabel(unit, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        if count:
            ax.legend(fontsize=6, ncol=3 if count > 6 else 2, loc="upper left", framealpha=0.6)
    for ax in axes.flat[len(titles):]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("seconds", fontsize=8)
    fig.suptitle(f"memrank dashboard, {end - start:.0f} s of Prometheus data (rate window "
                 f"{values.get('__rate_interval')}, profile {values.get('profile')!r})", fontsize=11)
    fig.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, format="png", metadata={"Software": None})
    plt.close(fig)
    return drawn


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prometheus", required=True, help="Prometheus base URL, e.g. http://127.0.0.1:9090")
    parser.add_argument("--output", type=Path, required=True, help="PNG to write")
    parser.add_argument("--start", type=float, help="unix seconds (default: --minutes before --end)")
    parser.add_argument("--end", type=float, help="unix seconds (default: now)")
    parser.add_argument("--minutes", type=float, default=15, help="range when --start is not given (default 15)")
    parser.add_argument("--step", type=float, default=0, help="seconds between points (default: range / 300)")
    parser.add_argument("--rate-interval", default="1m", help="value of $__rate_interval (default 1m)")
    parser.add_argument("--var", action="append", default=[], metavar="NAME=VALUE",
                        help="a template variable's value (repeatable), e.g. profile=default")
    parser.add_argument("--panel", action="append", default=[], metavar="TITLE",
                        help=f"a panel to draw (repeatable; default: {', '.join(KEY_PANELS)})")
    args = parser.parse_args(argv)
    end = args.end if args.end is not None else time.time()
    start = args.start if args.start is not None else end - args.minutes * 60
    step = args.step or max(1.0, (end - start) / 300)
    overrides = dict(v.split("=", 1) for v in args.var)
    prom = Prometheus(args.prometheus)
    drawn = render(prom, args.output, start, end, step, default_values(prom, args.rate_interval, overrides),
                   tuple(args.panel) or KEY_PANELS)
    print(json.dumps({"output": str(args.output), "bytes": args.output.stat().st_size, "series": drawn}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
