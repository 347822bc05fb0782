"""Cost of the conversation signals and of lexical stemming on the request path, side by side in one run.

    python -m bench.context_ab [--rounds 25]

For 400 and 1,600 candidates with 384-dim embeddings (the bench's seeded
workload, threads of 20 turns, two speakers, a query naming one), the median
in-process ``rank()`` time of: ``default`` on candidates carrying
thread/position/speaker; ``default`` on the same candidates without them
(context, thread and speaker return at once); ``default`` without the context
and speaker signals; ``default`` without the five signals the learned default
added (thread, length, hop, statement, date); and ``default`` with exact-word
lexical (no stemmer). The five are called alternately, so machine load hits
each alike, each on a batch built afresh (outside the timer), so nothing a
batch caches carries over from one call to the next.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np

from bench.data import QUERY, REFERENCE_TIME, workload
from memrank.core.batch import RankParams, batch_from_rows
from memrank.core.pipeline import rank
from memrank.profiles.builtin import BUILTIN_PROFILES


def main() -> None:
    """Print the five medians per size."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=25)
    args = ap.parse_args()
    d = BUILTIN_PROFILES["default"]
    without = dataclasses.replace(d, signals=tuple(s for s in d.signals if s.name not in ("context", "speaker")))
    learned = ("thread", "length", "hop", "statement", "date")
    previous = dataclasses.replace(d, signals=tuple(s for s in d.signals if s.name not in learned))
    unstemmed = dataclasses.replace(d, lexical_stemmer=None)
    params = RankParams(query=QUERY + " alex", reference_time=REFERENCE_TIME, profile="p", max_items=20)
    print("| candidates | default, fields set (ms) | default, no fields (ms) | without context and speaker (ms) "
          "| without thread, length, hop, statement, date (ms) | fields set, no stemming (ms) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in (400, 1600):
        w = workload(n, 384)
        rows = [dataclasses.replace(r, thread=f"s{i // 20}", position=i % 20, speaker="alex" if i % 2 else "sam")
                for i, r in enumerate(w.rows)]
        cases = [(rows, d), (list(w.rows), d), (rows, without), (rows, previous), (rows, unstemmed)]
        times: list[list[float]] = [[] for _ in cases]
        for _ in range(args.rounds):
            for k, (r, p) in enumerate(cases):
                b = batch_from_rows(r)
                t = time.perf_counter()
                rank(b, params, {"p": p})
                times[k].append(time.perf_counter() - t)
        print(f"| {n:,} | " + " | ".join(f"{1000 * float(np.median(t)):.2f}" for t in times) + " |")


if __name__ == "__main__":
    main()
