"""``python -m bench.ab_trees BASE_SERVER_DIR NEW_SERVER_DIR``: the in-process handler of two source trees, timed
alternately.

Each tree runs in its own Python process (two versions of ``memrank`` cannot share one), both kept warm; the parent
asks each in turn for one round of calls, so both see the same machine load at nearly the same moment. Per
workload it prints the median thread CPU per call of each tree, their ratio, and a bootstrap interval of the ratio
of medians over the rounds. On a shared, noisy machine this is the comparison to trust, not two separate runs.

    git worktree add /tmp/base HEAD            # or: git archive <rev> server | tar -x -C /tmp/base
    PYTHONPATH=. python -m bench.ab_trees /tmp/base/server server --sizes 1,100,400 --rounds 40

``--stage`` times one part of the call instead of the whole handler (``handler``: parse + ``handle_rank`` +
serialise, as the server runs it; ``score``: the core's scoring alone; ``rank``: scoring and selection).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from pathlib import Path

_CHILD = r"""
import json, sys, time
from bench.data import workload
from memrank._gen.v1 import ranking_pb2 as pb
from bench.calls import call_of, rank_handler
from memrank.config import load_settings
settings = load_settings()
handle = rank_handler(settings)
stage, specs = sys.argv[1], json.loads(sys.argv[2])
calls = {}
for n, dim in specs:
    w = workload(n, dim)
    data = w.request.SerializeToString()
    if stage == "handler":
        def call(data=data):
            return handle(data, call_of(now=0.0)).SerializeToString()
    else:
        from memrank.api import convert
        from memrank.api.validate import validate_rank_request
        from memrank.core.pipeline import rank, resolve_profile
        req = pb.RankRequest.FromString(data)
        batch, params = convert.request_to_domain(req, 0.0, validate_rank_request(req, settings.limits, None,
                                                                                   profiles=settings.profiles))
        if stage == "rank":
            def call(batch=batch, params=params):
                return rank(batch, params, settings.profiles, settings.layers, None)
        else:
            from memrank.core.scoring.combine import score
            from memrank.core.signals.base import ScoringContext
            profile = resolve_profile(settings.profiles, params.profile)
            def call(batch=batch, params=params, profile=profile):
                return score(batch, ScoringContext(params.query, params.reference_time, params.explicit_lookup),
                             profile)
    for _ in range(5):
        call()
    calls[f"{n}x{dim}"] = call
print("ready", flush=True)
for line in sys.stdin:
    name, reps = line.split()
    call, out = calls[name], []
    for _ in range(int(reps)):
        t = time.thread_time()
        call()
        out.append(time.thread_time() - t)
    print(json.dumps(out), flush=True)
"""


def _spawn(tree: str, stage: str, specs: list[tuple[int, int]]) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(tree).resolve()), str(Path.cwd())]),
               OPENBLAS_NUM_THREADS="1")
    p = subprocess.Popen([sys.executable, "-c", _CHILD, stage, json.dumps(specs)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, env=env)
    assert p.stdout is not None
    if p.stdout.readline().strip() != "ready":
        raise SystemExit(f"{tree}: the child did not start")
    return p


def _ask(p: subprocess.Popen[str], name: str, reps: int) -> list[float]:
    assert p.stdin is not None and p.stdout is not None
    p.stdin.write(f"{name} {reps}\n")
    p.stdin.flush()
    return [float(x) for x in json.loads(p.stdout.readline())]


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    return (s[(len(s) - 1) // 2] + s[len(s) // 2]) / 2


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.ab_trees", description=__doc__.split("\n\n")[0])
    ap.add_argument("base", help="the base tree's server/ directory (what is on PYTHONPATH for memrank)")
    ap.add_argument("new", help="the new tree's server/ directory")
    ap.add_argument("--sizes", default="1,100,400", help="candidate counts (default 1,100,400)")
    ap.add_argument("--dim", type=int, default=384, help="embedding dimension (0: none; default 384)")
    ap.add_argument("--rounds", type=int, default=30, help="alternations per workload (default 30)")
    ap.add_argument("--reps", type=int, default=5, help="calls per tree per round (default 5)")
    ap.add_argument("--stage", choices=("handler", "rank", "score"), default="handler")
    opts = ap.parse_args(argv)
    specs = [(int(s), opts.dim) for s in opts.sizes.split(",")]
    procs = {"base": _spawn(opts.base, opts.stage, specs), "new": _spawn(opts.new, opts.stage, specs)}
    rng = random.Random(0)
    try:
        for n, dim in specs:
            name = f"{n}x{dim}"
            rounds: list[tuple[float, float]] = []
            for r in range(opts.rounds):
                order = ("base", "new") if r % 2 == 0 else ("new", "base")  # ABBA: neither always goes first
                got = {k: _median(_ask(procs[k], name, opts.reps)) for k in order}
                rounds.append((got["base"], got["new"]))
            base, new = _median([b for b, _ in rounds]), _median([x for _, x in rounds])
            boots = []
            for _ in range(1000):
                pick = [rounds[rng.randrange(len(rounds))] for _ in rounds]
                boots.append(_median([x for _, x in pick]) / _median([b for b, _ in pick]))
            boots.sort()
            print(f"{opts.stage} {name}: base {base * 1e3:.3f} ms, new {new * 1e3:.3f} ms, new/base {new / base:.3f} "
                  f"[{boots[25]:.3f}, {boots[974]:.3f}] ({opts.rounds} rounds x {opts.reps} calls each)", flush=True)
    finally:
        for p in procs.values():
            p.kill()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
