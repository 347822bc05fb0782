"""Synthetic fleet decision logs: decision and feedback records as a live server writes them, in gzip partitions.

    python -m bench.fleet_logs OUT_DIR --gb 1            # about 1 GB of gzip JSON lines (compressed size)

The records follow memrank.decision.v1 / memrank.feedback.v1 as ``decisions.record`` writes them
under the ``default`` profile with ``content: omit`` (every field, the ten signals' raw, normalised
and contribution columns, 17 digits a float as Python prints them): about 650 bytes of JSON a
candidate, as a live server's records measure. Each decision has 50-150 candidates (about 65 KB);
half get a feedback record (1-3 labels, one of them a selected candidate); 1 % of the records are
delivered twice (a retried upload). Each file draws its decisions' candidate columns from 64
bodies of its own (formatting floats dominates the cost otherwise; a body is ~65 KB, beyond gzip's
32 KB window, so compression sees no more repetition than in real logs). Partitions follow the S3 sink's layout,
``dt=YYYY-MM-DD/hour=HH/pod-P-SEQ.jsonl.gz``, about 32 MB each, gzip level 1 (3.0x on these
records; level 6 gives 3.2x for 4.7x the CPU). Deterministic in ``--seed``; two processes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memrank.config import load_settings
from memrank.core.profile import Profile

FILE_BYTES = 32 * 1024 * 1024
POOL = 64  # candidate bodies per file, each record a new decision over one of them (formatting floats is slow)
OUTCOMES = ("selected", "redundant", "over_budget", "below_threshold", "max_items")


def _default() -> Profile:
    return load_settings(env={}).profiles["default"]


def _floats(values: np.ndarray) -> str:
    return "[" + ",".join(map(repr, values.tolist())) + "]"


def body(rng: np.random.Generator, profile: Profile) -> tuple[str, list[str], list[str]]:
    """A decision's ``candidates`` object as JSON; its candidate ids and outcomes."""
    n = int(rng.integers(50, 151))
    ids = [f"m{int(x)}" for x in rng.integers(0, 10**9, n)]
    outcome = [OUTCOMES[int(x)] for x in rng.choice(len(OUTCOMES), n, p=(0.1, 0.2, 0.3, 0.3, 0.1))]
    signals = []
    for s in profile.signals:
        raw = rng.random(n)
        signals.append(f'"{s.name}":{{"raw":{_floats(raw)},"normalized":{_floats(raw)},'
                       f'"contribution":{_floats(raw * s.weight)}}}')
    tokens = rng.integers(5, 200, n)
    rank = [i + 1 if o == "selected" else None for i, o in enumerate(outcome)]
    cands = {"count": n, "id": ids, "layer": ["other"] * n, "kind": [""] * n, "source": ["unspecified"] * n,
             "content_length": (tokens * 4).tolist(), "token_count": tokens.tolist(),
             "token_count_estimated": [False] * n}
    tail = {"final_score": rng.random(n).tolist(), "outcome": outcome, "rank": rank, "position": rank,
            "covered_by": [None] * n}
    text = (json.dumps(cands, separators=(",", ":"))[:-1] + ',"signals":{' + ",".join(signals) + "},"
            + json.dumps(tail, separators=(",", ":"))[1:])
    return text, ids, outcome


def decision(rng: np.random.Generator, n_id: int, profile: Profile, candidates: str) -> tuple[str, str, str]:
    """One decision record line over a ``candidates`` body; its decision and request ids."""
    did, rid = rng.bytes(32).hex(), f"conv-{n_id // 8}/turn-{n_id % 8}"
    seconds = n_id // 100
    head = {"schema": "memrank.decision.v1", "decision_id": did, "request_id": rid,
            "server_time": f"2026-12-06T{seconds // 3600 % 24:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}."
                           f"{n_id % 100:06d}Z",
            "reference_time": "2026-12-06T00:00:00.000000Z", "profile": profile.name,
            "policy_version": "policy-6e814e90d688",
            "weights": [{"signal": s.name, "weight": s.weight, "normalization": s.normalization}
                        for s in profile.signals],
            "shadow": None, "forced": False, "content": "omit", "query": {"length": 40, "tokens": 10}}
    return (json.dumps(head, separators=(",", ":"))[:-1] + ',"candidates":' + candidates + ',"allocations":[]}',
            did, rid)


def feedback(rng: np.random.Generator, did: str, rid: str, ids: list[str], outcome: list[str]) -> str:
    """A caller's labels for the decision: one selected candidate relevant, up to two others graded."""
    picked = [ids[outcome.index("selected")]] if "selected" in outcome else []
    picked += [ids[int(i)] for i in rng.integers(0, len(ids), int(rng.integers(0, 3)))]
    labels = [{"candidate_id": c, "relevance": int(rng.integers(1, 4)) if i == 0 else int(rng.integers(0, 4))}
              for i, c in enumerate(dict.fromkeys(picked))] or [{"candidate_id": ids[0], "relevance": 1}]
    return json.dumps({"schema": "memrank.feedback.v1", "feedback_id": rng.bytes(32).hex(), "decision_id": did,
                       "request_id": rid, "labeler": "bench", "server_time": "2026-12-06T23:59:59.000000Z",
                       "labels": labels}, separators=(",", ":"))


def write_file(path: Path, seed: int, first_id: int, size: int = FILE_BYTES) -> tuple[int, int]:
    """One partition of about FILE_BYTES compressed (written aside, then renamed); (decisions, bytes). A file
    already there is kept: an interrupted run resumes."""
    if path.exists():
        return 0, path.stat().st_size
    part = path.with_name(path.name + ".part")
    rng = np.random.default_rng(seed)
    profile = _default()
    bodies = [body(rng, profile) for _ in range(POOL)]
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with gzip.open(part, "wt", compresslevel=1, encoding="utf-8") as out:
        raw = out.buffer.fileobj  # type: ignore[attr-defined]
        while raw.tell() < size:
            candidates, ids, outcome = bodies[int(rng.integers(0, POOL))]
            line, did, rid = decision(rng, first_id + n, profile, candidates)
            lines = [line]
            if rng.random() < 0.5:
                lines.append(feedback(rng, did, rid, ids, outcome))
            for text in lines:
                out.write(text + "\n")
                if rng.random() < 0.01:
                    out.write(text + "\n")  # a retried upload: the same record again
            n += 1
    part.replace(path)
    return n, path.stat().st_size


def _job(job: tuple[Path, int, int]) -> tuple[int, int]:
    return write_file(*job)


def generate(out: Path, gb: float, seed: int = 0, processes: int = 2) -> tuple[int, int, int]:
    """Partitions totalling about ``gb`` GB compressed; (files, decisions, bytes)."""
    count = max(1, round(gb * 1e9 / FILE_BYTES))
    jobs = [(out / f"dt=2026-12-06/hour={i // 8 % 24:02d}/pod-{i % 8}-{i // 192:04d}.jsonl.gz", seed * 100003 + i,
             i * 1_000_000) for i in range(count)]
    with multiprocessing.Pool(processes) as pool:
        done = pool.map(_job, jobs, chunksize=1)
    return count, sum(d for d, _ in done), sum(b for _, b in done)


def main(argv: Sequence[str] | None = None) -> int:
    """Write the partitions and say how many."""
    p = argparse.ArgumentParser(prog="python -m bench.fleet_logs", description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--gb", type=float, default=1.0, help="compressed size to write (default 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--processes", type=int, default=2)
    a = p.parse_args(argv)
    files, decisions, size = generate(a.out, a.gb, a.seed, a.processes)
    print(f"wrote {files} files, {decisions} decisions, {size / 1e9:.2f} GB under {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
