"""``python -m bench.replay [--data DIR] [--conversation 0] [--passes 3]``: the replay workload (``bench.replay_data``:
a LoCoMo conversation's questions in order, each sending its retrieval pool) end to end through the shipped Python
client, against LangChain's in-process scoring + MMR on the same pools, with the feature memo on and off.

Two one-worker ``memrank serve`` processes on loopback, one with ``server.feature_memo_bytes`` at its default and
one with 0 (off). Each pass sends every question once, in order, to both servers and runs LangChain on it, the three
alternating question by question (one load for all). The first pass is the replay as an agent makes it: the memo
server starts empty and fills as the questions come; later passes find every memory stored. Per pass: the sum of
each one's wall times and the ratios to LangChain. The memo's hit ratio and the handler's CPU per call (in-process,
memo on and off) come from the same questions without gRPC.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench.baselines import langchain_available, langchain_rank
from bench.calls import call_of, rank_handler
from bench.data import K
from bench.live import serve
from bench.replay_data import DATA, Question, missing, questions, seen_share
from memrank.client import RankingClient
from memrank.config import load_settings
from memrank.feature_memo import FeatureMemo


def _timed(fn: Callable[..., object], *args: object, **kwargs: object) -> float:
    t0 = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - t0


def in_process(qs: list[Question]) -> dict[str, float]:
    """Handler CPU ms per call over one replay, memo off and on (fresh memo), and the memo's hit ratio."""
    handle = rank_handler(load_settings(env={}))
    data = [q.message.SerializeToString() for q in qs]
    for d in data[:5]:  # imports and first-call work
        handle(d, call_of(now=0.0))
    out = {}
    memo = FeatureMemo(64 << 20)
    lends: tuple[tuple[str, dict[str, FeatureMemo]], ...] = (("off", {}), ("on", {"features": memo}))
    for name, lent in lends:
        t0 = time.process_time()
        for d in data:
            handle(d, call_of(now=0.0, **lent))
        out[f"handler_cpu_ms_{name}"] = (time.process_time() - t0) / len(data) * 1e3
    out["hit_ratio"] = memo.hits / max(1, memo.hits + memo.misses)
    return out


def replay(qs: list[Question], passes: int) -> list[dict[str, float]]:
    """Per pass: seconds through the client to the memo-on and memo-off servers and LangChain's, summed."""
    baselines = [langchain_rank(q.workload, K) for q in qs]
    rows = []
    with serve(1) as on, serve(1, env_extra={"MEMRANK_FEATURE_MEMO_BYTES": "0"}) as off, \
            RankingClient(f"127.0.0.1:{on.port}", timeout=30) as c_on, \
            RankingClient(f"127.0.0.1:{off.port}", timeout=30) as c_off:
        for lc in baselines[:5]:
            lc()
        for _ in range(passes):
            sums = {"memo_on": 0.0, "memo_off": 0.0, "langchain": 0.0}
            for q, lc in zip(qs, baselines, strict=True):
                sums["memo_on"] += _timed(c_on.rank, q.request, embeddings=q.embeddings)
                sums["langchain"] += _timed(lc)
                sums["memo_off"] += _timed(c_off.rank, q.request, embeddings=q.embeddings)
            rows.append(sums)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.replay", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA, help=f"the LoCoMo directory (default {DATA})")
    ap.add_argument("--conversation", type=int, default=0, help="which conversation of dev.jsonl (default 0)")
    ap.add_argument("--passes", type=int, default=3, help="replays of all the questions (default 3)")
    ap.add_argument("--limit", type=int, default=0, help="the first N questions only (default all)")
    opts = ap.parse_args(argv)
    why = missing(opts.data)
    if why is not None:
        print(f"bench.replay skipped: {why}", file=sys.stderr)
        return 0
    if not langchain_available():
        raise SystemExit("LangChain is not installed (pip install -e '.[bench]')")
    qs = questions(opts.data, opts.conversation, opts.limit)
    sizes = [len(q.request["candidates"]) for q in qs]
    print(f"{len(qs)} questions, pools of {min(sizes)}-{max(sizes)} (mean {sum(sizes) / len(sizes):.1f}); "
          f"{seen_share(qs):.1%} of the candidates were sent by an earlier question")
    ip = in_process(qs)
    print(f"in-process handler CPU per call: memo off {ip['handler_cpu_ms_off']:.2f} ms, on "
          f"{ip['handler_cpu_ms_on']:.2f} ms (x{ip['handler_cpu_ms_on'] / ip['handler_cpu_ms_off']:.2f}); "
          f"hit ratio {ip['hit_ratio']:.1%}")
    print(f"{'pass':>4} {'memo on s':>10} {'memo off s':>11} {'LangChain s':>12} {'on/LC':>6} {'off/LC':>7}")
    for p, row in enumerate(replay(qs, opts.passes), 1):
        lc = row["langchain"]
        print(f"{p:>4} {row['memo_on']:>10.3f} {row['memo_off']:>11.3f} {lc:>12.3f} {row['memo_on'] / lc:>6.2f} "
              f"{row['memo_off'] / lc:>7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
