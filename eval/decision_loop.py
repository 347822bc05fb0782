"""The decision-log loop end to end: serve with the log on, replay questions, send feedback, tune from the log.

    python eval/decision_loop.py --data DEV.jsonl --embeddings DEV.npz [--workdir DIR] [--folds 2]
        [--config examples/new-team.yaml --producing new-team] [--model linear --model ascent]
        [--curve 25,50,100,200,400 --seeds 5 --plot curve.png]

What a team does with its own traffic (README, "Decision log and feedback"),
played on LoCoMo-shaped conversations:

1. start ``memrank serve`` with ``decision_log`` writing to ``DIR/decisions.jsonl``
   (and the profiles of ``--config``, e.g. ``examples/new-team.yaml``);
2. send every question of categories 1-4 as the Rank request `memrank eval`
   sends, under the ``--producing`` profile (default ``default``), with
   ``request_id`` ``<conversation>/q<index>``;
3. send ``RecordFeedback`` for each answer: the gold evidence turns relevant
   (grade 2, "used"), every other candidate unlabelled (0);
4. stop the server (SIGTERM: the log is flushed), then run
   ``memrank tune --log DIR/decisions.jsonl --base PRODUCING`` once per
   ``--model`` (k-fold by conversation, the request id's prefix), which fits
   the weights from the logged signals alone, writing ``DIR/tuned.yaml``
   (``DIR/tuned-<model>.yaml`` for more than one model);
5. with ``--curve``: the learning curve of each model on the same log
   (``eval/learning_curve.py``: the same test folds, fewer training labels).

It prints the tuner's report; the numbers to read are its out-of-fold line
(the producing profile against the weights fitted on the other folds).
``eval/served_folds.py`` then serves each fold's weights through `memrank
eval` (diversity pass and threshold included) for the same comparison as served.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from memrank.client import RankingClient
from memrank.tuning.locomo import conversations, requests

GRADE = 2  # "relevant (used in the answer)"


def start(config: Path, log: Path) -> tuple[subprocess.Popen[bytes], int]:
    """`memrank serve` on a free loopback port; returns it and its port once it logs "serving"."""
    err = log.open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "memrank.cli", "serve", "--config", str(config), "--address",
                             "127.0.0.1:0", "--metrics-port", "0"], stderr=err)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for line in log.read_text().splitlines():
            if line.startswith("{") and json.loads(line).get("msg") == "serving":
                return proc, int(json.loads(line)["port"])
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"memrank serve did not start:\n{log.read_text()}")


def replay(port: int, data: Path, embeddings: Path | None, profile: str) -> tuple[int, int]:
    """Rank every question under the profile and send its feedback; (decisions logged, feedback sent)."""
    logged = sent = 0
    with RankingClient(f"127.0.0.1:{port}", timeout=30) as client:
        for conv in conversations(data, embeddings):
            for question, request in requests(conv, profile):
                request.request_id = question.key  # "<conversation>/q<index>": tune groups by the prefix
                response = client.rank(request)
                logged += response.decision_logged
                client.record_feedback(response, dict.fromkeys(question.evidence, GRADE), labeler="gold")
                sent += 1
    return logged, sent


def serve_config(config: Path | None, decisions: Path) -> dict[str, Any]:
    """--config's settings (its profiles) with the decision log on, writing to ``decisions``."""
    doc = (yaml.safe_load(config.read_text(encoding="utf-8")) or {}) if config is not None else {}
    return doc | {"decision_log": {"enabled": True, "sink": "file", "path": str(decisions)}}


def tune(args: argparse.Namespace, decisions: Path, model: str, out: Path) -> int:
    """`memrank tune --log` of the producing profile with one model; its exit status."""
    config = ["--config", str(args.config)] if args.config is not None else []
    return subprocess.call([sys.executable, "-m", "memrank.cli", "tune", "--log", str(decisions), *config,
                            "--base", args.producing, "--model", model, "--out", str(out), "--folds",
                            str(args.folds), "--metric", args.metric, "--no-progress",
                            "--holdout", "0"])  # every group in the folds, as the published numbers were measured


def main() -> int:
    """Run the loop; exit status of `memrank tune` (the first that failed)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--embeddings", type=Path)
    ap.add_argument("--workdir", type=Path, default=Path("decision-loop"))
    ap.add_argument("--folds", type=int, default=2)
    ap.add_argument("--metric", default="recall@5")
    ap.add_argument("--config", type=Path, help="config file with the producing profile (served and tuned from)")
    ap.add_argument("--producing", default="default", help="profile that answers and is logged (default: default)")
    ap.add_argument("--model", action="append", choices=("ascent", "linear"),
                    help="tune --model, repeatable (default: ascent)")
    ap.add_argument("--curve", metavar="SIZES", help="also the learning curve at these training sizes, e.g. "
                                                     "25,50,100,200,400 (eval/learning_curve.py)")
    ap.add_argument("--seeds", type=int, default=5, help="with --curve: subsamples per size (default 5)")
    ap.add_argument("--plot", type=Path, help="with --curve: write the curve as a PNG")
    args = ap.parse_args()
    models = args.model or ["ascent"]
    args.workdir.mkdir(parents=True, exist_ok=True)
    decisions = args.workdir / "decisions.jsonl"
    decisions.unlink(missing_ok=True)
    config = args.workdir / "serve.yaml"
    config.write_text(yaml.safe_dump(serve_config(args.config, decisions), sort_keys=False))
    proc, port = start(config, args.workdir / "serve.log")
    try:
        logged, sent = replay(port, args.data, args.embeddings, args.producing)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(60)
    print(f"decision loop: {logged} decisions logged, {sent} feedback records sent under {args.producing!r}; "
          f"server exit {code}")
    for model in models:
        out = args.workdir / ("tuned.yaml" if len(models) == 1 else f"tuned-{model}.yaml")
        if status := tune(args, decisions, model, out):
            return status
    if args.curve is None:
        return 0
    config_args = ["--config", str(args.config)] if args.config is not None else []
    plot = ["--plot", str(args.plot)] if args.plot is not None else []
    model_args = [x for model in models for x in ("--model", model)]
    return subprocess.call([sys.executable, str(Path(__file__).with_name("learning_curve.py")), "--log",
                            str(decisions), *config_args, "--base", args.producing, *model_args,
                            "--folds", str(args.folds), "--metric", args.metric, "--sizes", args.curve,
                            "--seeds", str(args.seeds), *plot])


if __name__ == "__main__":
    sys.exit(main())
