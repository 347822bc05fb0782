"""The measurements: in-process stages, baselines, live gRPC latency and throughput, ghz."""

from __future__ import annotations

import dataclasses
import os
import platform
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from bench import client_e2e, ghz, live, memory, overhead
from bench.baselines import filled_importance, langchain_available, langchain_rank, port_scorers
from bench.data import K, Workload, workload
from bench.timing import Timing, measure, measure_pair, peak_rss_mib
from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api import convert
from memrank.api.call import Call, Policy, RankInput, handle_rank
from memrank.api.encode import outcome_to_proto
from memrank.api.validate import validate_rank_request
from memrank.config import load_settings
from memrank.core.batch import Batch, RankParams
from memrank.core.pipeline import rank
from memrank.core.profile import Profile, SignalSpec
from memrank.core.scoring.combine import score
from memrank.core.scoring.scores import Scores
from memrank.core.signals.base import ScoringContext
from memrank.core.types import ExplainLevel

EXPLAIN = {"full": ExplainLevel.FULL, "selected": ExplainLevel.SELECTED, "none": ExplainLevel.NONE}


@dataclass(frozen=True)
class Options:
    """What to run and for how long."""

    sizes: tuple[int, ...] = (100, 400, 1600)
    dims: tuple[int, ...] = (0, 384)
    reps: int = 30  # repetitions per in-process measurement (fewer at large sizes)
    calls: int = 200  # sequential gRPC calls per latency measurement (fewer at large sizes)
    load_seconds: float = 4.0  # closed-loop throughput run per workload and worker count
    concurrency: int = 8
    ghz_seconds: float = 10.0
    ghz: bool = True
    baselines: bool = True
    live: bool = True
    memory_repeats: int = 3  # fresh servers per peak-RSS measurement (0: no memory measurement)
    memory_largest: bool = True  # also the largest request the limits allow (61 MiB)
    clients: tuple[str, ...] = ("python", "go", "ts", "java")  # end to end through each (bench.client_e2e)


def _reps(base: int, n: int) -> int:
    """Fewer repetitions for big batches, never fewer than 15 (a median of 5 moved with every burst of
    load on the shared machine; 15 at 1,600 candidates adds a few seconds)."""
    return max(min(base, 15), base * 100 // max(n, 100))


def _ms(t: Timing) -> dict[str, float]:
    """Wall p50/p99, median thread CPU per call (the stage split uses it: other load barely moves it)."""
    return {"p50_ms": t.p50, "p99_ms": t.p99, "cpu_p50_ms": t.cpu_p50, "cpu_ms": t.cpu_per_call,
            "samples": len(t.wall)}


def stages(w: Workload, reps: int) -> dict[str, Any]:
    """In-process server time, split by stage, plus core-only and whole-handler times."""
    settings = load_settings(env={})
    data = w.request.SerializeToString()
    req = pb.RankRequest.FromString(data)
    repeated = pb.RankRequest.FromString(w.repeated.SerializeToString())
    batch, params = convert.request_to_domain(req, 0.0)
    profile = settings.profiles["default"]
    ctx = ScoringContext(params.query, params.reference_time, params.explicit_lookup, None)
    outcome = rank(batch, params, settings.profiles, settings.layers)
    out: dict[str, Any] = {
        "request_bytes": len(data),
        "decode": _ms(measure(lambda: pb.RankRequest.FromString(data), reps)),
        "validate": _ms(measure(lambda: validate_rank_request(req, settings.limits), reps)),
        "columns": _ms(measure(lambda: convert.request_to_domain(req, 0.0), reps)),
        # The same batch with each candidate's embedding as repeated floats instead of one packed matrix.
        "columns_repeated": _ms(measure(lambda: convert.request_to_domain(repeated, 0.0), reps)),
        # A fresh Batch object per call: per-batch word memos must not carry over, as between requests.
        # Alternated call for call, so selection = core - signals compares like with like.
        **dict(zip(("signals", "core"), map(_ms, measure_pair(
            lambda: score(dataclasses.replace(batch), ctx, profile),
            lambda: rank(dataclasses.replace(batch), params, settings.profiles, settings.layers), reps)),
            strict=True)),
        "encode": _ms(measure(lambda: outcome_to_proto(outcome, batch, params, "bench", "v")
                              .SerializeToString(), reps)),
        "handler": _ms(measure(lambda: handle_rank(RankInput(req), Policy.of(settings), Call(0.0))
                               .SerializeToString(), reps)),
        "selected": len(outcome.ranked),
    }
    out["selection"] = {"p50_ms": max(0.0, out["core"]["p50_ms"] - out["signals"]["p50_ms"]),
                        "cpu_p50_ms": max(0.0, out["core"]["cpu_p50_ms"] - out["signals"]["cpu_p50_ms"])}
    out["cpu_us_per_candidate"] = out["handler"]["cpu_ms"] * 1e3 / w.n
    explain = {}
    for name, level in EXPLAIN.items():
        p = replace(params, explain=level)
        def encode(p: RankParams = p) -> bytes:
            return bytes(outcome_to_proto(outcome, batch, p, "bench", "v").SerializeToString())

        t = measure(encode, reps)
        size = len(encode())
        explain[name] = {"encode_p50_ms": t.p50, "response_bytes": size}
    out["explain"] = explain
    return out


# The lexical IDF signal alone, as a profile a user could configure: combined = the signal, so the port's
# output and memrank's can be compared value for value.
LEXICAL_ONLY = Profile(name="lexical-idf", description="the lexical IDF signal alone (bench pair)",
                       signals=(SignalSpec("lexical", 1.0),), gate_zero_importance=False)


def core_vs_ports(w: Workload, reps: int) -> dict[str, Any]:
    """memrank's ``score()`` next to the literal pure-Python ports on the same batch, pair by pair.

    Each pair computes one function (checked: the port's scores equal memrank's combined scores to 1e-9,
    else the bench stops): agent-observer; generative-agents with every importance given (the reference
    formula's input, ``baselines.filled_importance``); the lexical IDF share under ``LEXICAL_ONLY``. memrank's
    ``score()`` also runs its safety gate (the injection pre-scan) in every pair, which the ports do not.
    """
    settings = load_settings(env={})
    batch, params = convert.request_to_domain(w.request, 0.0)
    ctx = ScoringContext(params.query, params.reference_time, False, None)
    profiles = settings.profiles
    ga_batch = dataclasses.replace(batch, importance=np.array(filled_importance(w), dtype=np.float64))
    pairs = {
        "agent-observer": (batch, profiles["agent-observer"]),
        "generative-agents": (ga_batch, profiles["generative-agents"]),
        "lexical-idf": (batch, LEXICAL_ONLY),
    }
    ports = port_scorers(w)
    port_reps = max(3, min(reps, 2000 // max(w.n, 1)))
    out: dict[str, Any] = {"pairs": {}}
    for name, (b, profile) in pairs.items():
        def ours(b: Batch = b, profile: Profile = profile) -> Scores:
            return score(dataclasses.replace(b), ctx, profile)

        want, got = np.array(ports[name](), dtype=np.float64), ours().combined
        if want.shape != got.shape or not np.allclose(got, want, rtol=0.0, atol=1e-9):
            raise AssertionError(f"the {name} port and memrank's score() disagree: not one function")
        t_port, t_core = measure_pair(ports[name], ours, port_reps if name == "lexical-idf" else reps)
        out["pairs"][name] = {"port_ms": t_port.cpu_p50, "memrank_ms": t_core.cpu_p50,
                              "port_wall_ms": t_port.p50, "memrank_wall_ms": t_core.p50,
                              "speedup": t_port.cpu_p50 / t_core.cpu_p50, "same_output": True,
                              "profile": profile.name}
    port_total = sum(p["port_ms"] for p in out["pairs"].values())
    core_total = sum(p["memrank_ms"] for p in out["pairs"].values())
    out.update(port_total_ms=port_total, memrank_total_ms=core_total, speedup=port_total / core_total)
    return out


def profiles(w: Workload, reps: int) -> dict[str, float]:
    """Median CPU ms of ``score()`` under every built-in profile, on one batch (fresh Batch per call)."""
    settings = load_settings(env={})
    batch, params = convert.request_to_domain(w.request, 0.0)
    ctx = ScoringContext(params.query, params.reference_time, False, None)
    def scorer(profile: Profile) -> Any:
        return lambda: score(dataclasses.replace(batch), ctx, profile)

    return {name: measure(scorer(p), reps).cpu_p50 for name, p in sorted(settings.profiles.items())}


def growth(small: Workload, large: Workload, reps: int) -> dict[str, Any]:
    """Core and whole-handler CPU time at two batch sizes, called alternately (one call of each in turn), so
    both see the same machine: the ratio is not moved by load that comes and goes between workloads."""
    settings = load_settings(env={})
    out: dict[str, Any] = {"small": small.n, "large": large.n, "dim": small.dim}
    cores, handlers = [], []
    for w in (small, large):
        batch, params = convert.request_to_domain(w.request, 0.0)
        req = pb.RankRequest.FromString(w.request.SerializeToString())
        cores.append(lambda b=batch, p=params: rank(dataclasses.replace(b), p, settings.profiles, settings.layers))
        handlers.append(lambda r=req: handle_rank(RankInput(r), Policy.of(settings), Call(0.0)).SerializeToString())
    for name, (f_small, f_large) in (("core", cores), ("handler", handlers)):
        a, b = measure_pair(f_small, f_large, reps)
        out[name] = {"small_cpu_p50_ms": a.cpu_p50, "large_cpu_p50_ms": b.cpu_p50, "ratio": b.cpu_p50 / a.cpu_p50}
    return out


def langchain(w: Workload, reps: int) -> dict[str, Any]:
    """LangChain scoring + MMR (k = the selection size) on the same batch, in-process."""
    if not langchain_available():
        return {"skipped": "langchain-classic / langchain-core not installed (pip install -e '.[bench]')"}
    t = measure(langchain_rank(w, K), reps)
    return {**_ms(t), "k": K}


def latency(server: live.Server, data: bytes, calls: int, beside: Any = None) -> dict[str, Any]:
    """Sequential Rank calls over loopback: p50/p99, the server's CPU per call.

    With ``beside`` (the LangChain baseline of the same batch), the two run
    alternately, call for call, so both see the same load on the machine.
    """
    with live.Caller(f"127.0.0.1:{server.port}") as c:
        for _ in range(3):
            c.rank(data)
        cpu0 = server.cpu_seconds()
        if beside is None:
            t = measure(lambda: c.rank(data), calls, warmup=0)
        else:
            t, lc = measure_pair(lambda: c.rank(data), beside, calls)
        cpu = server.cpu_seconds() - cpu0
        response = len(c.rank(data))
    per_call = cpu / (calls + (1 if beside else 0)) * 1e3
    out: dict[str, Any] = {"p50_ms": t.p50, "p99_ms": t.p99, "server_cpu_ms": per_call, "response_bytes": response}
    if beside is not None:
        out["langchain_interleaved"] = _ms(lc)
    return out


def empty_rpc(server: live.Server, calls: int) -> dict[str, Any]:
    """The floor: a Health/Check round trip on the same server."""
    with live.Caller(f"127.0.0.1:{server.port}") as c:
        t = measure(c.health, calls, warmup=10)
    return {"p50_ms": t.p50, "p99_ms": t.p99}


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    import google.protobuf  # type: ignore[import-untyped]
    import grpc

    return {"nproc": os.cpu_count(), "cpu_model": model, "python": platform.python_version(),
            "numpy": np.__version__, "grpcio": grpc.__version__,
            "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS", ""), "protobuf": google.protobuf.__version__,
            "malloc": {k: os.environ.get(k, "")
                       for k in ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_ARENA_MAX")},
            "platform": platform.platform(), "load_average_at_start": list(os.getloadavg()),
            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def run(opts: Options, log: Any = print) -> dict[str, Any]:
    """Every measurement; the JSON-ready results."""
    results: dict[str, Any] = {"machine": machine(), "options": vars(opts) | {"k": K}, "workloads": {}}
    loads = {(n, d): workload(n, d) for n in opts.sizes for d in opts.dims}
    for (n, d), w in loads.items():
        key = f"{n}x{d}"
        reps = _reps(opts.reps, n)
        log(f"in-process {key} ({reps} reps)")
        entry: dict[str, Any] = {"n": n, "dim": d, "stages": stages(w, reps)}
        if opts.baselines and d == 0:
            entry["ports"] = core_vs_ports(w, reps)
        if n == 400 and d == 0:
            entry["profiles"] = profiles(w, reps)
        if opts.baselines and d > 0:
            entry["langchain"] = langchain(w, reps)
        results["workloads"][key] = entry
    results["growth"] = {}
    for d in opts.dims:
        if (400, d) in loads and (1600, d) in loads:
            log(f"growth 400 -> 1600 at dim {d}, alternated")
            results["growth"][f"dim{d}"] = growth(loads[(400, d)], loads[(1600, d)], _reps(opts.reps, 1600))
    if opts.live:
        results["live"] = _live(opts, loads, log)
    if opts.live and opts.baselines and opts.clients:
        log(f"end to end through the clients {', '.join(opts.clients)}, each alternated with LangChain")
        results["clients_run"] = {"warm": client_e2e.WARM}
        results["clients"] = client_e2e.measure([n for n in opts.sizes], max(15, opts.reps), opts.clients,
                                                lambda line: log(line.strip()))
    if opts.live and opts.memory_repeats:
        sizes = [n for n in opts.sizes if n in (400, 1600)] or list(opts.sizes[:1])
        log(f"peak RSS growth over the wire size: {sizes} x 384 and the largest request, "
            f"{opts.memory_repeats} fresh servers each")
        results["memory"] = memory.measure(sizes, 384, opts.memory_largest, opts.memory_repeats)
    results["bench_process_peak_rss_mib"] = peak_rss_mib()
    results["machine"]["load_average_at_end"] = list(os.getloadavg())
    return results


SLICES = 4  # throughput: 1 and 2 workers alternate in this many slices, so both see the same machine load


def _live(opts: Options, loads: dict[tuple[int, int], Workload], log: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"latency": {}, "throughput": {}}
    data = {f"{n}x{d}": w.request.SerializeToString() for (n, d), w in loads.items()}
    log("live servers: 1 worker and 2 workers")
    with live.serve(1) as one, live.serve(2) as two:
        servers = {1: one, 2: two}
        out["empty_rpc"] = empty_rpc(one, opts.calls)
        for (n, d), w in loads.items():
            key = f"{n}x{d}"
            beside = langchain_rank(w, K) if d and opts.baselines and langchain_available() else None
            calls = max(5, opts.calls * 100 // max(n, 100))
            out["latency"][key] = latency(one, data[key], calls, beside)
            if d and n <= 400:  # each candidate's embedding as repeated floats instead of the packed matrix
                out.setdefault("latency_repeated", {})[key] = latency(one, w.repeated.SerializeToString(), calls,
                                                                      beside)
        for key, body in data.items():
            n = int(key.split("x")[0])
            parts: dict[int, list[dict[str, float]]] = {1: [], 2: []}
            cpu = {1: 0.0, 2: 0.0}
            for _ in range(SLICES):
                for workers, server in servers.items():
                    cpu0 = server.cpu_seconds()
                    parts[workers].append(live.throughput(f"127.0.0.1:{server.port}", body,
                                                          opts.load_seconds / SLICES, opts.concurrency))
                    cpu[workers] += server.cpu_seconds() - cpu0
            for workers, runs in parts.items():
                requests, seconds = sum(r["requests"] for r in runs), sum(r["seconds"] for r in runs)
                out["throughput"].setdefault(key, {})[f"workers_{workers}"] = {
                    "rps": requests / seconds, "requests": requests, "seconds": seconds,
                    "errors": sum(r["errors"] for r in runs),
                    "server_cpu_us_per_candidate": cpu[workers] / max(requests, 1) / n * 1e6}
        out["server_peak_rss_mib"] = {f"workers_{k}": s.peak_rss_mib() for k, s in servers.items()}
        if opts.ghz:
            key = "400x384" if "400x384" in data else next(iter(data))
            log(f"ghz on {key}, {opts.ghz_seconds:g} s, concurrency {opts.concurrency}, 2 workers")
            out["ghz"] = {"workload": key, "workers": 2,
                          **ghz.run(f"127.0.0.1:{two.port}", data[key], opts.ghz_seconds, opts.concurrency)}
    sizes = [n for n in opts.sizes if n <= 400 and (n, 384) in loads]
    if sizes:
        log(f"server CPU per call over the handler's, alternated in one run: {sizes} x 384")
        out["overhead"] = overhead.measure(sizes, log=lambda line: log(line.strip()))
    return out
