"""``python -m bench.instructions SERVER_DIR [SERVER_DIR ...]``: instructions per in-process call, counted by
valgrind (cachegrind), so that a change can be judged on a loaded machine.

Thread CPU time on a shared VM moves by 10-30 % from one second to the next (host steal counts as running), more
than most single changes gain; the instruction count of a call does not move with load. For each tree and
workload, a child process makes the same call ``--few`` and then ``--many`` times under
``valgrind --tool=cachegrind``; the difference over the difference in calls is one call's instructions, start-up
and imports cancelled out. Slow (valgrind runs Python ~50x slower): about a minute per tree and workload.

    PYTHONPATH=server:. python -m bench.instructions /tmp/base/server server --sizes 1,100,400

``--shadow PROFILE`` (or ``off``): each call is observed (a no-op metrics hook, as the server's) with the server's
shadow on that profile (``shadow.profile``), or off: the two runs give the shadow's cost per call.

``--form columns``: the request as the shipped clients send it (``memrank.client.requests.rank_request`` of the
workload's dict candidates and embedding matrix: candidates as columns), instead of one message per candidate.

Under valgrind OpenSSL's SHA-256 runs without the CPU's SHA extensions: the receipt's hashing (the embeddings'
bytes most of it) counts at its software cost, 6.2 of 29.2 M instructions at 100 x 384 (callgrind).

Fewer instructions is not the same as less time (cache misses, branch mispredictions, system calls are not in it),
so a change that matters is confirmed by ``bench.ab_trees`` or ``python -m bench`` as well.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = r"""
import sys
from bench.data import workload
from bench.calls import call_of, rank_handler
from memrank.config import load_settings
settings = load_settings()
n, dim, calls, memo, shadow, form, explain = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:8]
if shadow:  # the server's shadow runs on observed calls: both runs observe, one shadows
    from dataclasses import replace
    from memrank.config import ShadowSettings
    settings = replace(settings, shadow=ShadowSettings(None if shadow == "off" else shadow, 1.0))
    hooks = {"observe": lambda outcome: None}
else:
    hooks = {}
w = workload(n, dim)
if form == "columns":  # as the shipped clients send it: candidates as columns, embeddings packed
    from bench.drivers import request_dict
    from memrank.client.requests import rank_request
    data = rank_request(request_dict(w), w.embeddings).SerializeToString()
else:
    data = w.request.SerializeToString()
if explain != "unset":  # an ExplainLevel by name; "unset" leaves the request as the workload made it
    from memrank._gen.v1 import ranking_pb2 as pb
    req = pb.RankRequest.FromString(data)
    req.explain = pb.ExplainLevel.Value(explain)
    data = req.SerializeToString()
handle = rank_handler(settings)
if memo == "off":
    lend = lambda: dict(hooks)
else:
    from memrank.feature_memo import FeatureMemo
    shared = FeatureMemo(64 << 20)
    lend = (lambda: {"features": shared, **hooks}) if memo == "warm" else \
        (lambda: {"features": FeatureMemo(64 << 20), **hooks})
handle(data, call_of(now=0.0, **lend())).SerializeToString()  # warm: caches, lazy imports (and the warm memo)
for _ in range(calls):
    handle(data, call_of(now=0.0, **lend())).SerializeToString()
"""


def instructions(tree: str, n: int, dim: int, calls: int, memo: str = "off", shadow: str = "",
                 form: str = "candidates", explain: str = "unset") -> int:
    """Instructions (Ir) of a child process that makes ``calls`` calls after one warm-up call (``memo``: off, or a
    feature memo new for each call, "cold", or one for all of them, "warm": every memory found; ``shadow``: "" as
    before, else observed calls with the server's shadow on this profile, or "off"; ``form``: "candidates", one
    message per candidate, or "columns", the request as the shipped clients build it from dicts; ``explain``: "unset"
    or an ExplainLevel name, e.g. "EXPLAIN_LEVEL_NONE")."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(tree).resolve()), str(Path.cwd())]),
               OPENBLAS_NUM_THREADS="1", PYTHONHASHSEED="0")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        run = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}",
                              sys.executable, "-c", _CHILD, str(n), str(dim), str(calls), memo, shadow, form,
                              explain],
                             capture_output=True, text=True, env=env, check=False)
        if run.returncode:
            raise SystemExit(f"valgrind failed for {tree} ({n}x{dim}):\n{run.stderr[-2000:]}")
        m = re.search(r"^summary:\s+(\d+)", out.read_text(), re.M)
        if not m:
            raise SystemExit(f"no summary line in cachegrind's output for {tree}")
        return int(m.group(1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.instructions", description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", nargs="+", help="server/ directories (what is on PYTHONPATH for memrank)")
    ap.add_argument("--sizes", default="1,100,400", help="candidate counts (default 1,100,400)")
    ap.add_argument("--dim", type=int, default=384, help="embedding dimension (default 384)")
    ap.add_argument("--few", type=int, default=2, help="calls in the short run (default 2)")
    ap.add_argument("--many", type=int, default=6, help="calls in the long run (default 6)")
    ap.add_argument("--feature-memo", choices=("off", "cold", "warm"), default="off",
                    help="lend each call a new feature memo (cold) or one for all (warm); default off")
    ap.add_argument("--shadow", default="", metavar="PROFILE",
                    help="observed calls with the server's shadow on PROFILE, or off (default: neither, unobserved)")
    ap.add_argument("--form", choices=("candidates", "columns"), default="candidates",
                    help="the request's candidates one message each (default) or as columns, as the clients send")
    ap.add_argument("--explain", default="unset", metavar="LEVEL",
                    help="the request's explain level, an ExplainLevel name (default: unset, i.e. SELECTED)")
    opts = ap.parse_args(argv)
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    base: dict[int, float] = {}
    for tree in opts.trees:
        for n in (int(s) for s in opts.sizes.split(",")):
            args = (opts.feature_memo, opts.shadow, opts.form, opts.explain)
            few = instructions(tree, n, opts.dim, opts.few, *args)
            many = instructions(tree, n, opts.dim, opts.many, *args)
            per = (many - few) / (opts.many - opts.few)
            ratio = f", x{per / base[n]:.3f} the first tree" if n in base else ""
            base.setdefault(n, per)
            shadow = (f" shadow {opts.shadow}" if opts.shadow else "") + \
                (f" explain {opts.explain}" if opts.explain != "unset" else "")
            print(f"{tree} {n}x{opts.dim} {opts.form} memo {opts.feature_memo}{shadow}: {per / 1e6:.2f} M "
                  f"instructions per call{ratio}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
