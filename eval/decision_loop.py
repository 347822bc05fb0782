"""The decision-log loop end to end: serve with the log on, replay questions, send feedback, tune from the log.

    python eval/decision_loop.py --data DEV.jsonl --embeddings DEV.npz [--workdir DIR] [--folds 2]

What a team does with its own traffic (README, "Decision log and feedback"),
played on LoCoMo-shaped conversations:

1. start ``memrank serve`` with ``decision_log`` writing to ``DIR/decisions.jsonl``;
2. send every question of categories 1-4 as the Rank request `memrank eval`
   sends, with ``request_id`` ``<conversation>/q<index>``;
3. send ``RecordFeedback`` for each answer: the gold evidence turns relevant
   (grade 2, "used"), every other candidate unlabelled (0);
4. stop the server (SIGTERM: the log is flushed), then run
   ``memrank tune --log DIR/decisions.jsonl`` (k-fold by conversation, the
   request id's prefix), which fits the weights from the logged signals alone.

It prints the tuner's report; the numbers to read are its out-of-fold line
(base `default` against the weights fitted on the other folds).
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

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


def replay(port: int, data: Path, embeddings: Path | None) -> tuple[int, int]:
    """Rank every question and send its feedback; (decisions logged, feedback sent)."""
    logged = sent = 0
    with RankingClient(f"127.0.0.1:{port}", timeout=30) as client:
        for conv in conversations(data, embeddings):
            for question, request in requests(conv, "default"):
                request.request_id = question.key  # "<conversation>/q<index>": tune groups by the prefix
                response = client.rank(request)
                logged += response.decision_logged
                client.record_feedback(response, dict.fromkeys(question.evidence, GRADE), labeler="gold")
                sent += 1
    return logged, sent


def main() -> int:
    """Run the loop; exit status of `memrank tune`."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--embeddings", type=Path)
    ap.add_argument("--workdir", type=Path, default=Path("decision-loop"))
    ap.add_argument("--folds", type=int, default=2)
    ap.add_argument("--metric", default="recall@5")
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    decisions = args.workdir / "decisions.jsonl"
    decisions.unlink(missing_ok=True)
    config = args.workdir / "serve.yaml"
    config.write_text(json.dumps({"decision_log": {"enabled": True, "sink": "file", "path": str(decisions)}}))
    proc, port = start(config, args.workdir / "serve.log")
    try:
        logged, sent = replay(port, args.data, args.embeddings)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(60)
    print(f"decision loop: {logged} decisions logged, {sent} feedback records sent; server exit {code}")
    return subprocess.call([sys.executable, "-m", "memrank.cli", "tune", "--log", str(decisions), "--out",
                            str(args.workdir / "tuned.yaml"), "--folds", str(args.folds), "--metric", args.metric,
                            "--no-progress"])


if __name__ == "__main__":
    sys.exit(main())
