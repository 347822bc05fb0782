"""The printed table and the targets (each with its threshold and met / not met)."""

from __future__ import annotations

from typing import Any

STAGES = ("decode", "validate", "columns", "signals", "selection", "encode", "handler")


def _f(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _get(d: dict[str, Any], *path: str) -> Any:
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return None
        d = d[p]
    return d


def targets(r: dict[str, Any]) -> list[dict[str, Any]]:
    """Each target of issue 8: measured value, threshold, met."""
    w, lv = r["workloads"], r.get("live", {})
    out: list[dict[str, Any]] = []

    def add(name: str, value: float | None, op: str, threshold: float, detail: str) -> None:
        met = None if value is None else (value >= threshold if op == ">=" else value <= threshold)
        out.append({"target": name, "value": value, "op": op, "threshold": threshold, "met": met, "detail": detail})

    ports = _get(w, "400x0", "ports")
    add("core scoring at 400 vs pure-Python ports (speed-up)", _get(ports, "speedup") if ports else None, ">=", 20.0,
        "sum of the three port timings / sum of memrank score() on the same batch, each pair one function "
        "(outputs checked equal): agent-observer, generative-agents (every importance given), lexical IDF "
        "(the lexical signal alone)")
    e2e = _get(lv, "latency", "400x384", "p50_ms")
    lc = _get(lv, "latency", "400x384", "langchain_interleaved", "p50_ms")
    add("e2e gRPC Rank 400x384 / in-process LangChain (ratio)", e2e / lc if e2e and lc else None, "<=", 0.5,
        f"Rank p50 {_f(e2e)} ms (explain unset = SELECTED, packed embeddings, 1 worker) vs LangChain "
        f"scoring + MMR p50 {_f(lc)} ms, called alternately")
    st = _get(w, "1600x384", "stages")
    if st:
        compute = st["signals"]["cpu_p50_ms"] + st["selection"]["cpu_p50_ms"]
        movement = st["decode"]["cpu_p50_ms"] + st["columns"]["cpu_p50_ms"]
        add("compute / data movement at 1600x384 (ratio)", compute / movement, "<=", 3.0,
            f"signals + selection {_f(compute)} ms vs decode + columns {_f(movement)} ms")
    else:
        add("compute / data movement at 1600x384 (ratio)", None, "<=", 3.0, "1600x384 not run")
    t1 = _get(lv, "throughput", "400x384", "workers_1", "rps")
    t2 = _get(lv, "throughput", "400x384", "workers_2", "rps")
    add("throughput 2 workers / 1 worker at 400x384", t2 / t1 if t1 and t2 else None, ">=", 1.7,
        f"{_f(t1, 1)} -> {_f(t2, 1)} requests/s")
    for dim in (0, 384):
        for label in ("core", "handler"):
            g = _get(r, "growth", f"dim{dim}", label)
            a, b = (g["small_cpu_p50_ms"], g["large_cpu_p50_ms"]) if g else (None, None)
            add(f"{label} cost growth 400 -> 1600 at dim {dim} (x4 candidates)", b / a if a and b else None, "<=", 4.0,
                f"{_f(a)} -> {_f(b)} ms, called alternately; slope "
                f"{_f((b - a) / 1200 * 1e3 if a and b else None)} us per candidate")
    return out


def table(r: dict[str, Any]) -> str:
    """The human-readable report."""
    m = r["machine"]
    lines = [f"machine: {m['nproc']} cores, {m['cpu_model']}, Python {m['python']}, numpy {m['numpy']}, "
             f"grpcio {m['grpcio']}, protobuf {m['protobuf']}, OPENBLAS_NUM_THREADS="
             f"{m.get('openblas_num_threads') or 'unset'}, "
             + ", ".join(f"{k}={v or 'unset'}" for k, v in m.get("malloc", {}).items())
             + "; load average at start "
             f"{', '.join(f'{x:.1f}' for x in m['load_average_at_start'])}", ""]
    lv = r.get("live", {})
    lines.append("server time by stage, in-process, median CPU ms per call (default profile, diversity on, "
                 f"explain unset = SELECTED, k <= {r['options']['k']}; embeddings packed in embeddings_f32, "
                 "'cols rep' = columns with repeated-float embeddings instead); e2e = wall ms over loopback gRPC, "
                 f"1 worker; rps = closed loop, concurrency {r['options']['concurrency']}")
    head = ("workload", "decode", "validate", "columns", "cols rep", "signals", "select", "encode", "handler",
            "cpu us/cand",
            "e2e p50", "e2e p99", "rps 1w", "rps 2w", "req KiB", "resp KiB")
    lines.append(" | ".join(f"{h:>9}" for h in head))
    for key, e in r["workloads"].items():
        s = e["stages"]
        lat = _get(lv, "latency", key) or {}
        tp = _get(lv, "throughput", key) or {}
        stage_cpu = [_f(s[k]["cpu_p50_ms"]) for k in STAGES]
        stage_cpu.insert(3, _f(_get(s, "columns_repeated", "cpu_p50_ms")))
        row = (key, *stage_cpu, _f(s["cpu_us_per_candidate"], 1), _f(lat.get("p50_ms")), _f(lat.get("p99_ms")),
               _f(_get(tp, "workers_1", "rps"), 1), _f(_get(tp, "workers_2", "rps"), 1),
               _f(s["request_bytes"] / 1024, 0), _f(lat.get("response_bytes", 0) / 1024, 0))
        lines.append(" | ".join(f"{c:>9}" for c in row))
    lines += ["", "explain levels: encode p50 ms / response KiB"]
    for key, e in r["workloads"].items():
        ex = e["stages"]["explain"]
        lines.append(f"  {key:>9}: " + "; ".join(f"{k} {_f(v['encode_p50_ms'])} ms / {v['response_bytes'] / 1024:.0f}"
                                                 for k, v in ex.items()))
    for key, e in r["workloads"].items():
        if "profiles" in e:
            lines += ["", f"score() by profile at {key}, median CPU ms: "
                      + ", ".join(f"{k} {_f(v)}" for k, v in e["profiles"].items())]
    lines += ["", "baselines (same batches, same run, p50 ms)"]
    for key, e in r["workloads"].items():
        if "ports" in e:
            p = e["ports"]
            pairs = "; ".join(f"{k} port {_f(v['port_ms'])} vs memrank {_f(v['memrank_ms'])} (x{v['speedup']:.1f})"
                              for k, v in p["pairs"].items())
            lines.append(f"  {key:>9} pure-Python ports (CPU ms, alternated, same output checked): {pairs}; "
                         f"all three x{p['speedup']:.1f}")
        if "langchain" in e:
            lc = e["langchain"]
            side = _get(lv, "latency", key, "langchain_interleaved", "p50_ms")
            lines.append(f"  {key:>9} LangChain scoring + MMR: " + (lc["skipped"] if "skipped" in lc else
                         f"p50 {_f(lc['p50_ms'])} alone, {_f(side)} beside the gRPC calls (k {lc['k']}); memrank "
                         f"handler {_f(e['stages']['handler']['p50_ms'])} wall, e2e "
                         f"{_f(_get(lv, 'latency', key, 'p50_ms'))}"))
        lines.append(f"  {key:>9} floor: protobuf parse {_f(e['stages']['decode']['p50_ms'], 3)}")
    if "empty_rpc" in lv:
        lines.append(f"  empty RPC (Health/Check) round trip: p50 {_f(lv['empty_rpc']['p50_ms'], 3)} "
                     f"p99 {_f(lv['empty_rpc']['p99_ms'], 3)}")
    if "server_peak_rss_mib" in lv:
        lines.append("  peak RSS MiB: server " + ", ".join(f"{k} {v:.0f}" for k, v in lv["server_peak_rss_mib"].items())
                     + f"; bench process {r['bench_process_peak_rss_mib']:.0f}")
    g = lv.get("ghz")
    if g:
        lines.append("")
        lines.append(f"ghz {g['workload']}, {g['workers']} workers: " + (g["skipped"] if "skipped" in g else
                     f"{g['rps']:.1f} req/s over {g['seconds']:.1f} s at concurrency {g['concurrency']}, "
                     + ", ".join(f"{k} {v:.1f} ms" for k, v in g["quantiles_ms"].items() if k in
                                 ("p50", "p90", "p99")) + f", status {g['status_codes']}"))
    lines += ["", "targets"]
    for t in r["targets"]:
        met = "not run" if t["met"] is None else ("met" if t["met"] else "NOT MET")
        lines.append(f"  {t['target']}: {_f(t['value'])} (target {t['op']} {t['threshold']:g}) {met} "
                     f"- {t['detail']}")
    return "\n".join(lines)
