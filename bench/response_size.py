"""``python -m bench.response_size``: a Rank response's bytes, how many of them are strings the same for every
memory of the request, and the Python client's time to parse (and read) it, in whichever tree is first on the path.

For each bench workload (100, 400 and 1,600 x 384, default profile) at explain unset (SELECTED), NONE and FULL,
and for the first questions of a LoCoMo conversation (``bench.replay_data``; skipped when the data is absent), the
in-process handler's response is serialised and taken apart by field: a string that every memory carrying a
breakdown holds at the same place (a signal's reason, a stage's name, a memory-level reason) is per-request
constant, and its wire bytes (tag, length, text) are summed per kind. The client's part is what ``RankingClient``
does with the bytes (gRPC's deserializer, ``RankResponse.FromString``), then a reader that walks every selected
memory's breakdown (ids, scores, each signal's name, weight and reasons), as a caller printing explanations does.

    PYTHONPATH=server:. python -m bench.response_size
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from bench.calls import call_of, rank_handler
from bench.data import workload
from memrank._gen.v1 import ranking_pb2 as pb
from memrank.config import load_settings

# A child that parses (and reads) the responses in the files given, ``calls`` times each, as the client would.
_CHILD = r"""
import sys
from pathlib import Path
from memrank._gen.v1 import ranking_pb2 as pb
from bench.response_size import read
calls, mode, paths = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
blobs = [Path(p).read_bytes() for p in paths]
for _ in range(calls):
    for b in blobs:
        r = pb.RankResponse.FromString(b)
        if mode == "read":
            read(r)
"""

LEVELS = {"unset": 0, "NONE": pb.EXPLAIN_LEVEL_NONE, "FULL": pb.EXPLAIN_LEVEL_FULL}
NOTE_STARTS = ("weight ", "the same for every eligible candidate")


def _string_bytes(s: str) -> int:
    """Wire bytes of one string field numbered below 16: a tag byte, the length as a varint, the UTF-8 text."""
    n = len(s.encode())
    return 1 + max(1, (n.bit_length() + 6) // 7) + n


def _strings(m: Any) -> Iterator[tuple[str, str, str]]:
    """(kind, place, text) of every string a memory repeats per request: its layer, stages, breakdown reasons."""
    yield "layer", "layer", m.layer
    for j, t in enumerate(getattr(m, "stages", ())):
        for f in ("stage", "objective", "provenance"):
            yield "stage strings", f"stage{j}.{f}", getattr(t, f)
    if not m.HasField("breakdown"):
        return
    for r in m.breakdown.reasons:
        yield "memory reasons", "reasons", r
    for s in m.breakdown.signals:
        yield "signal names", "signal.name", s.name
        for r in s.reasons:
            kind = "weight notes" if r.startswith(NOTE_STARTS) else "other signal reasons"
            yield kind, f"signal[{s.name}].reasons", r


def constant_bytes(resp: Any) -> Counter[str]:
    """Wire bytes, per kind, of the strings every memory with a breakdown holds at the same place (at NONE, the
    selected memories); plus the per-request-constant doubles SignalScore.weight."""
    memories = [m for m in (*resp.selected, *resp.dropped) if m.HasField("breakdown")] or list(resp.selected)
    if len(memories) < 2:
        return Counter()
    seen = [{(place, text) for _, place, text in _strings(m)} for m in memories]
    everywhere = set.intersection(*seen)
    out: Counter[str] = Counter()
    for m in memories:
        for kind, place, text in _strings(m):
            if (place, text) in everywhere:
                out[kind] += _string_bytes(text)
        if m.HasField("breakdown"):
            out["weights (doubles)"] += sum(9 for s in m.breakdown.signals if s.weight)
    return out


def read(resp: Any) -> int:
    """What a caller printing explanations touches: every selected memory's id, score and breakdown."""
    n = 0
    for note in getattr(resp, "signal_notes", ()):
        n += len(note.reason) + len(note.signal)
    for m in resp.selected:
        n += len(m.id) + int(m.score > 0)
        for s in m.breakdown.signals:
            n += len(s.name) + int(s.weight > 0) + sum(len(r) for r in s.reasons)
    return n


def _parse_read(b: bytes) -> int:
    return read(pb.RankResponse.FromString(b))


def per_call(fn: Callable[[], object], repeat: int = 15) -> float:
    """Seconds of one call of fn: the fastest of ``repeat`` batches of enough calls to last ~20 ms (the least
    disturbed by other processes on a shared machine)."""
    t0, calls = time.perf_counter(), 0
    while time.perf_counter() - t0 < 0.02:
        fn()
        calls += 1
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls)
    return min(times)


def client_instructions(blobs: list[bytes], mode: str, few: int = 2, many: int = 12) -> float:
    """Instructions (valgrind cachegrind) of the client parsing one of ``blobs`` (``mode`` "read": and reading it),
    on average: a run of ``many`` calls minus one of ``few``, start-up and imports cancelled out."""
    counts = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, b in enumerate(blobs):
            paths.append(os.path.join(tmp, f"r{i}.bin"))
            with open(paths[-1], "wb") as f:
                f.write(b)
        for calls in (few, many):
            out = os.path.join(tmp, "cg.out")
            subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}",
                            sys.executable, "-c", _CHILD, str(calls), mode, *paths], capture_output=True,
                           check=True, env=dict(os.environ, PYTHONHASHSEED="0"))
            with open(out) as f:
                m = re.search(r"^summary:\s+(\d+)", f.read(), re.M)
            assert m, "no summary line in cachegrind's output"
            counts.append(int(m.group(1)))
    return (counts[1] - counts[0]) / (many - few) / len(blobs)


def requests(sizes: list[int], locomo: int, levels: list[str]) -> Iterator[tuple[str, bytes]]:
    """(label, request bytes): each workload at each level, then LoCoMo questions at each level."""
    for n in sizes:
        base = workload(n, 384).request
        for level in levels:
            yield f"{n}x384 {level}", _at(base, level)
    if locomo:
        from bench.replay_data import DATA, missing, questions

        if missing(DATA) is None:  # the evaluation asks at NONE: here at each level, as the workloads
            qs = questions(DATA, 0, locomo)
            for level in levels:
                for q in qs:
                    yield f"locomo {level}", _at(q.message, level)


def _at(base: Any, level: str) -> bytes:
    """The request's bytes with explain at ``level``."""
    req = pb.RankRequest()
    req.CopyFrom(base)
    req.explain = LEVELS[level]  # type: ignore[assignment]
    return bytes(req.SerializeToString())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.response_size", description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100,400,1600", help="candidate counts (default 100,400,1600)")
    ap.add_argument("--locomo", type=int, default=20, help="LoCoMo questions of conversation 0 (0: none)")
    ap.add_argument("--instructions", action="store_true",
                    help="the client's parse (and read) in instructions (valgrind) instead of wall time")
    ap.add_argument("--levels", default=",".join(LEVELS), help="explain levels (default unset,NONE,FULL)")
    opts = ap.parse_args(argv)
    handle = rank_handler(load_settings(env={}))
    groups: dict[str, list[bytes]] = {}  # a workload's one response, or a LoCoMo level's responses
    for label, data in requests([int(s) for s in opts.sizes.split(",")], opts.locomo,
                                opts.levels.split(",")):
        groups.setdefault(label, []).append(handle(data, call_of(now=1_767_225_600.0)).SerializeToString())
    for label, blobs in groups.items():  # means over a group's responses
        const = sum((constant_bytes(pb.RankResponse.FromString(b)) for b in blobs), Counter())
        q = len(blobs)
        if opts.instructions:
            unit, parse, parse_read = "M instr", *(client_instructions(blobs, m) / 1e6 for m in ("parse", "read"))
        else:
            unit = "us"
            parse = statistics.mean(per_call(partial(pb.RankResponse.FromString, b)) for b in blobs) * 1e6
            parse_read = statistics.mean(per_call(partial(_parse_read, b)) for b in blobs) * 1e6
        print(f"{label:16} {statistics.mean(map(len, blobs)):9,.0f} B  x{q:<3} constant "
              f"{sum(const.values()) / q:8,.0f} B { {k: round(v / q) for k, v in const.items()} }  parse "
              f"{parse:7.3f} {unit}  parse+read {parse_read:7.3f} {unit}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
