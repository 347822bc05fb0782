"""Paired comparison of two `memrank eval --per-question` files: one row of each, over the same questions.

    python eval/compare_runs.py after.jsonl:default before.jsonl:default

prints, for categories 1-4, each compared metric's mean in both and the
paired-bootstrap 95% interval of the difference (``evaluation.bootstrap``),
so two code versions (or two configs) can be compared question by question,
e.g. a change to a built-in profile against the commit before it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from memrank.evaluation.bootstrap import paired
from memrank.evaluation.report import COMPARED, OVERALL_CATEGORIES


def load(spec: str) -> dict[str, dict[str, float]]:
    """``FILE:ROW`` -> {question key: metrics} of that row, categories 1-4."""
    path, _, row = spec.rpartition(":")
    out = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if rec["row"] == row and rec["category"] in OVERALL_CATEGORIES:
            out[rec["key"]] = rec
    if not out:
        raise SystemExit(f"compare_runs: no row {row!r} in {path}")
    return out


def main(argv: list[str] | None = None) -> None:
    """Print the paired differences, A - B."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("a", help="FILE:ROW, e.g. after.jsonl:default")
    p.add_argument("b", help="FILE:ROW it is compared with")
    args = p.parse_args(argv)
    a, b = load(args.a), load(args.b)
    if a.keys() != b.keys():
        raise SystemExit(f"compare_runs: the two rows cover different questions ({len(a)} vs {len(b)})")
    keys = sorted(a)
    print(f"{len(keys)} questions, categories 1-4: {args.a} - {args.b}")
    for m in COMPARED:
        x, y = [a[k][m] for k in keys], [b[k][m] for k in keys]
        d = paired(x, y)
        print(f"{m:>18}: {sum(x) / len(x):.4f} vs {sum(y) / len(y):.4f}  {d.delta:+.4f} [{d.low:+.4f}, {d.high:+.4f}]"
              f"  changed {sum(1 for u, v in zip(x, y, strict=True) if u != v)}")


if __name__ == "__main__":
    main()
