"""Peak memory of one Rank call over its request's size on the wire, side by side in one run.

    python -m bench.memory

Each workload gets a fresh `memrank serve --workers 1` on loopback (so an earlier
call's high-water mark does not hide this one's): one small warm-up call, then
the workload's request twice; reported is the server's peak RSS (VmHWM) above
its level after the warm-up, divided by the request's wire size. Workloads: the
bench's 400 x 384 and 1,600 x 384 batches (packed embeddings, ~40-word
contents), and the largest request the default limits allow by content (1,600
candidates of 40 KB, ~64 MB). ``memrank.grpc.inflight.PEAK_RATIO`` rounds the
largest ratio up.
"""

from __future__ import annotations

import random

from bench.data import workload
from bench.live import Caller, serve
from bench.timing import proc_peak_rss_mib
from memrank._gen.v1 import ranking_pb2 as pb
from memrank.grpc.inflight import PEAK_RATIO

MiB = 1 << 20


def maximal_request() -> bytes:
    """1,600 candidates of ~40 KB content each (about 64 MB on the wire)."""
    rng = random.Random(0)
    words = ["alpha", "memory", "agent", "berlin", "kafka", "retry", "budget", "token", "prompt", "invoice"]
    base = " ".join(rng.choice(words) for _ in range(6200))[:40_000]
    req = pb.RankRequest(request_id="big", query="where does the agent retry kafka", budget=pb.Budget(max_items=20))
    req.candidates.extend(pb.Candidate(id=f"m{i}", content=base[i:] + base[:i], retrieval_score=rng.random())
                          for i in range(1600))
    return req.SerializeToString()


def peak_ratio(data: bytes) -> tuple[float, float]:
    """(peak MiB above the warmed-up level, that over the wire size) for one workload."""
    warm = pb.RankRequest(query="warm", candidates=[pb.Candidate(id="a", content="x")]).SerializeToString()
    with serve(1) as s, Caller(f"127.0.0.1:{s.port}", max_bytes=128 * MiB) as c:
        c.rank(warm)
        base = proc_peak_rss_mib(s.popen.pid)
        c.rank(data)
        c.rank(data)
        peak = proc_peak_rss_mib(s.popen.pid) - base
    return peak, peak / (len(data) / MiB)


def main() -> None:
    """Print the table."""
    rows = [("400 x 384", workload(400, 384).request.SerializeToString()),
            ("1,600 x 384", workload(1600, 384).request.SerializeToString()),
            ("1,600 x 40 KB content (largest by content)", maximal_request())]
    print("| request | wire MiB | peak above warm MiB | ratio |")
    print("|---|---:|---:|---:|")
    for name, data in rows:
        peak, ratio = peak_ratio(data)
        print(f"| {name} | {len(data) / MiB:.2f} | {peak:.0f} | {ratio:.1f} |")
    print(f"\nmemrank.grpc.inflight.PEAK_RATIO = {PEAK_RATIO}")


if __name__ == "__main__":
    main()
