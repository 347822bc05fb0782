"""The printed table and the targets (each with its threshold and met / not met): issue 8's, then issue 31's
(the request path at its floor)."""

from __future__ import annotations

from typing import Any

from bench.memory import table as memory_table

STAGES = ("decode", "validate", "columns", "signals", "selection", "encode", "handler")


def _f(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _get(d: dict[str, Any], *path: str) -> Any:
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return None
        d = d[p]
    return d


_OPS = {">=": lambda v, t: v >= t, "<=": lambda v, t: v <= t, "<": lambda v, t: v < t}


def summary(r: dict[str, Any]) -> dict[str, Any]:
    """The numbers of a run that issue 31's "nothing else slower" targets compare between two runs."""
    lv = r.get("live", {})
    return {"started_utc": _get(r, "machine", "started_utc"),
            "rps_2w_400x384": _get(lv, "throughput", "400x384", "workers_2", "rps"),
            "ghz_p99_ms": _get(lv, "ghz", "quantiles_ms", "p99"),
            "e2e_p50_100x384_ms": _get(lv, "latency", "100x384", "p50_ms")}


def targets(r: dict[str, Any]) -> list[dict[str, Any]]:
    """Each target of issues 8, 31, 44 and 45: measured value, threshold, met (None: not run)."""
    w, lv = r["workloads"], r.get("live", {})
    out: list[dict[str, Any]] = []
    issue = 8

    def add(name: str, value: float | None, op: str, threshold: float, detail: str) -> None:
        met = None if value is None else _OPS[op](value, threshold)
        out.append({"issue": issue, "target": name, "value": value, "op": op, "threshold": threshold, "met": met,
                    "detail": detail})

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
    issue = 31
    for key, latencies, threshold, what in (("400x384", "latency", 0.25, "packed"),
                                            ("400x384", "latency_repeated", 0.35, "per-candidate embeddings"),
                                            ("1600x384", "latency", 0.15, "packed"),
                                            ("100x384", "latency", 1.0, "packed")):
        e2e = _get(lv, latencies, key, "p50_ms")
        lc = _get(lv, latencies, key, "langchain_interleaved", "p50_ms")
        add(f"e2e gRPC Rank {key} {what} / in-process LangChain (ratio)", e2e / lc if e2e and lc else None,
            "<" if threshold == 1.0 else "<=", threshold,
            f"Rank p50 {_f(e2e)} ms vs LangChain scoring + MMR p50 {_f(lc)} ms, called alternately" if e2e and lc
            else f"not run ({key} {what}, with the LangChain baselines)")
    handler = _get(w, "400x384", "stages", "handler", "cpu_p50_ms")
    paired = _get(lv, "overhead", "400x384")
    if paired:  # both measured in one run, block for block (bench.overhead)
        add("server process CPU per call / handler alone at 400x384 (ratio)", paired["ratio"], "<=", 1.2,
            f"server {_f(paired['server_cpu_ms'])} ms per sequential call (every thread, /proc schedstat) vs the "
            f"handler's {_f(paired['handler_cpu_ms'])} ms in-process, alternated in one run (median of "
            f"{paired['rounds']} block ratios)")
    else:
        server = _get(lv, "latency", "400x384", "server_cpu_ms")
        add("server process CPU per call / handler alone at 400x384 (ratio)",
            server / handler if server and handler else None, "<=", 1.2,
            f"server {_f(server)} ms per sequential call (from /proc, every thread) vs the handler's median thread "
            f"CPU {_f(handler)} ms in-process")
    add("handler CPU at 400x384 (ms)", handler, "<=", 4.0,
        f"median thread CPU of handle_rank + serialise, {_f(handler / 400 * 1e3 if handler else None)} us per "
        "candidate")
    for key, label in (("400x384", "400x384"), ("largest", "the largest request the limits allow (61 MiB)")):
        m = _get(r, "memory", key)
        add(f"peak RSS growth / wire size at {label}", m["ratio"] if m else None, "<=", 3.0,
            f"{_f(m['growth_mib'], 1)} MiB over {_f(m['wire_mib'])} MiB (median of {m['repeats']} fresh servers, "
            f"after a warm-up at a tenth of the candidates; {_f(m['fresh_ratio'], 1)} after a one-candidate call "
            "only; python -m bench.memory)" if m else "not measured (python -m bench.memory)")
    now, before = summary(r), r.get("before")
    for name, field, higher_is_better in (("throughput at 2 workers, 400x384", "rps_2w_400x384", True),
                                          ("ghz p99 at concurrency 8, 2 workers", "ghz_p99_ms", False),
                                          ("e2e p50 at 100x384", "e2e_p50_100x384_ms", False)):
        a, b = (before or {}).get(field), now[field]
        ratio = (a / b if higher_is_better else b / a) if a and b else None
        add(f"nothing else slower: {name}, slowdown against the --before run (ratio)", ratio, "<=", 1.1,
            f"{_f(a)} before ({(before or {}).get('started_utc')}) -> {_f(b)} now; runs minutes apart on a shared "
            "machine, so 10% is allowed" if before else "not run: pass --before OLD_RESULTS.json")
    issue = 45
    for key in ("100x384", "400x384"):
        paired = _get(lv, "overhead", key)
        if paired:
            add(f"server process CPU per call / handler alone at {key} (ratio)", paired["ratio"], "<=", 1.3,
                f"server {_f(paired['server_cpu_ms'])} ms vs handler {_f(paired['handler_cpu_ms'])} ms, alternated "
                "in one run (bench.overhead)")
    for key in ("400x384", "largest"):
        if m := _get(r, "memory", key):  # listed when measured, as the overhead rows above
            add(f"peak RSS growth / wire size at {key} (ratio)", m["ratio"], "<=", 4.0,
                f"{_f(m['growth_mib'], 1)} MiB over {_f(m['wire_mib'])} MiB (python -m bench.memory; issue 31's "
                "3x above)")
    for name, sizes in r.get("clients", {}).items():
        for key, threshold in (("100x384", 1.0), ("400x384", 0.4), ("1600x384", 0.25)):
            m = sizes.get(key)
            add(f"e2e through the {name} client {key} / in-process LangChain (ratio)", m["ratio"] if m else None,
                "<=", threshold, f"client p50 {_f(m['client_p50_ms'])} ms vs LangChain p50 "
                f"{_f(m['langchain_p50_ms'])} ms, called alternately" if m else sizes.get("skipped", f"{key} not run"))
    issue = 44
    scale = r.get("tune_scale") or []
    top = max(scale, key=lambda x: x["compressed_gb"]) if scale else None
    add("tune --log peak RSS at the largest input measured (GiB)", top["peak_rss_mib"] / 1024 if top else None,
        "<", 4.0, f"{top['compressed_gb']:.2f} GB of gzip logs, {top['decisions']:,} decisions, "
        f"{top['sampled']:,} sampled ({r.get('tune_scale_run', {}).get('command')})" if top
        else "not run: python -m bench.tune_scale --into bench/results.json")
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
    if "memory" in r:
        lines += ["", "peak RSS growth of one call over its wire size (fresh servers; python -m bench.memory)",
                  memory_table(r["memory"])]
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
        lines.append(f"  #{t.get('issue', 8)} {t['target']}: {_f(t['value'])} (target {t['op']} "
                     f"{t['threshold']:g}) {met} - {t['detail']}")
    return "\n".join(lines)
