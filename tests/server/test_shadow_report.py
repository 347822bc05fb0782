"""Shadow before promotion, end to end on a live `memrank serve`: the server shadows a candidate profile, the
decision log holds both selections, feedback arrives, a SIGHUP changes the shadow profile (a bad one is refused
naming the key), and `memrank shadow-report` joins the log into win rates whose every count is derived here by
hand from the responses and the labels."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from memrank.client import RankingClient
from tests.server.test_shadow import CANDIDATES, inversions
from tests.support.servers import Proc, start_serve, stop

QUERIES = ("tea deploy", "coffee memory", "the deploy", "memory about tea", "deploy 3", "tea")


def _config(path: Path, log: Path, shadow: str) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"decision_log:\n  enabled: true\n  sink: file\n  path: {log}\n  fsync: every\n"
                   f"shadow:\n  profile: {shadow}\n", encoding="utf-8")
    os.replace(tmp, path)


def _request(rid: str, query: str, **extra: Any) -> dict[str, Any]:
    return {"requestId": rid, "query": query, "referenceTime": "2026-06-01T12:00:00Z", "candidates": CANDIDATES,
            "budget": {"maxItems": 6}, **extra}


def _ranked(response: Any) -> list[str]:
    return [m.id for m in sorted(response.selected, key=lambda m: m.rank)]


def _until(proc: Proc, message: str, count: int = 1) -> None:
    deadline = time.monotonic() + 15
    while sum(line["msg"].startswith(message) for line in proc.lines()) < count:
        assert time.monotonic() < deadline, f"no {message!r} line: {proc.log.read_text()}"
        time.sleep(0.05)


def test_shadow_report_over_a_live_servers_log(tmp_path: Path) -> None:
    config, log = tmp_path / "memrank.yaml", tmp_path / "decisions.jsonl"
    _config(config, log, "assistant")
    proc = start_serve(tmp_path, "--config", str(config), "--address", "127.0.0.1:0", "--metrics-port", "0",
                       env={"MEMRANK_CONFIG_POLL_SECONDS": "0"})
    expected: dict[tuple[str, str], dict[str, int]] = {}
    selections: dict[str, tuple[list[str], list[str]]] = {}
    try:
        with RankingClient(f"127.0.0.1:{proc.port}", timeout=10) as client:
            def labelled(rid: str, query: str, shadow: str, pick: str) -> None:
                """Rank, then label one memory: held by the served selection only ("served"), by the shadow's
                only ("shadow"), by neither ("tie": both DCGs 0), or grade 0 only ("none")."""
                response = client.rank(_request(rid, query))
                served = _ranked(response)
                other = _ranked(client.rank(_request(f"{rid}/as-shadow", query, profile=shadow)))
                selections[rid] = (served, other)
                ids = [c["id"] for c in CANDIDATES]
                choice = {"served": [i for i in served if i not in other],
                          "shadow": [i for i in other if i not in served],
                          "tie": [i for i in ids if i not in served and i not in other], "none": ids}[pick]
                assert choice, (rid, pick, served, other)
                client.record_feedback(response, {choice[0]: 0 if pick == "none" else 3})
                if pick != "none":
                    tally = expected.setdefault(("default", shadow), {"served": 0, "shadow": 0, "tie": 0})
                    tally[pick] += 1

            for n, pick in enumerate(("served", "shadow", "shadow", "tie", "none")):
                labelled(f"conv-{n}/turn-1", QUERIES[n], "assistant", pick)

            _config(config, log, "nope")
            proc.popen.send_signal(signal.SIGHUP)
            _until(proc, "reload refused")
            _config(config, log, "support")
            proc.popen.send_signal(signal.SIGHUP)
            _until(proc, "reloaded")
            labelled("conv-9/turn-1", QUERIES[5], "support", "shadow")
    finally:
        assert stop(proc) == 0
    refused = next(line for line in proc.lines() if line["msg"].startswith("reload refused"))
    assert str(refused["error"]).startswith("shadow.profile: unknown profile 'nope'")

    records = [json.loads(x) for x in log.read_text().splitlines()]
    decisions = {r["request_id"]: r for r in records if r["schema"] == "memrank.decision.v1"}
    for rid, (served, other) in selections.items():
        shadow = decisions[rid]["shadow"]
        assert shadow["selected_ids"] == other  # the shadow's selection is the one that profile serves
        common = [x for x in served if x in other]
        assert shadow["overlap_at_k"] == len(set(served) & set(other[:len(served)])) / len(served)
        if len(common) >= 2:
            pairs = len(common) * (len(common) - 1) // 2
            tau = 1 - 2 * inversions(common, [x for x in other if x in common]) / pairs
            assert math.isclose(shadow["kendall_tau"], tau, abs_tol=1e-12)

    prom = tmp_path / "shadow.prom"
    out = subprocess.run([sys.executable, "-m", "memrank.cli", "shadow-report", "--log", str(log), "--json",
                          "--prometheus", str(prom)], capture_output=True, text=True, timeout=60, check=True)
    report = json.loads(out.stdout)
    got = {(p["profile"], p["shadow_profile"]): {w: p[w] for w in ("served", "shadow", "tie")}
           for p in report["pairs"]}
    assert got == expected == {("default", "assistant"): {"served": 1, "shadow": 2, "tie": 1},
                               ("default", "support"): {"served": 0, "shadow": 1, "tie": 0}}
    assert report["nothing_relevant"] == 1
    rates = {(s.labels["shadow_profile"], s.labels["winner"]): s.value
             for family in text_string_to_metric_families(prom.read_text()) for s in family.samples
             if s.name == "memrank_shadow_feedback_win_rate"}
    assert rates[("assistant", "shadow")] == 2 / 4 and rates[("assistant", "tie")] == 1 / 4
    assert rates[("support", "shadow")] == 1.0
