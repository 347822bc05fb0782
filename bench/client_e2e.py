"""``python -m bench.client_e2e [--sizes 100,400,1600] [--reps N]``: Rank end to end through the shipped Python
client, called as its users call it (README: a dict of protobuf-JSON candidates, times as RFC 3339 strings, and
a numpy embedding matrix), against LangChain's in-process scoring + MMR on the same batch, alternately in one run.

The client's time is all of it: building the request from the dict, packing the matrix, the gRPC call to a
one-worker ``memrank serve`` on loopback, and parsing the response. Prints p50 of each and their ratio.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
from typing import Any

from bench.baselines import langchain_available, langchain_rank
from bench.data import QUERY, REFERENCE_TIME, K, Workload, workload
from bench.live import serve
from bench.timing import measure_pair
from memrank.client import RankingClient


def _rfc3339(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat().replace("+00:00", "Z")


def request_dict(w: Workload) -> dict[str, Any]:
    """The workload as a user writes it: protobuf-JSON keys, RFC 3339 times, no embeddings (they go as a matrix)."""
    cands = []
    for r in w.rows:
        c: dict[str, Any] = {"id": r.id, "layer": r.layer, "kind": r.kind, "content": r.content,
                             "retrievalScore": r.retrieval_score, "accessCount": r.access_count,
                             "source": r.source, "safety": r.safety}
        if r.importance is not None:
            c["importance"] = r.importance
        if r.created_at is not None:
            c["createdAt"] = _rfc3339(r.created_at)
        if r.last_accessed_at is not None:
            c["lastAccessedAt"] = _rfc3339(r.last_accessed_at)
        cands.append(c)
    return {"requestId": "bench", "query": QUERY, "profile": "default", "referenceTime": _rfc3339(REFERENCE_TIME),
            "budget": {"maxTokens": 4000, "maxItems": K}, "candidates": cands}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,400,1600")
    parser.add_argument("--reps", type=int, default=40)
    args = parser.parse_args()
    if not langchain_available():
        raise SystemExit("LangChain is not installed (pip install -e '.[bench]')")
    with serve(1) as server, RankingClient(f"127.0.0.1:{server.port}", timeout=30) as client:
        print(f"{'size':>10} {'client p50 ms':>14} {'LangChain p50 ms':>17} {'ratio':>6}")
        for n in (int(s) for s in args.sizes.split(",")):
            w = workload(n, 384)
            data = request_dict(w)
            lc = langchain_rank(w, K)
            for _ in range(5):  # a fresh size: the server's and the client's first calls are not the ones timed
                client.rank(data, embeddings=w.embeddings)
                lc()
            ours, theirs = measure_pair(lambda d=data, e=w.embeddings: client.rank(d, embeddings=e), lc, args.reps)
            a, b = statistics.median(ours.wall) * 1e3, statistics.median(theirs.wall) * 1e3
            print(f"{n:>6}x384 {a:>14.2f} {b:>17.2f} {a / b:>6.2f}")


if __name__ == "__main__":
    main()
