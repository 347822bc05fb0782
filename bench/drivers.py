"""The shipped Go, TypeScript and Java clients timed as their users call them, from Python: each client has a small
driver program (``DRIVERS``) that loads a workload into the client's own types and, on each ``rank`` line, builds
the request through the client's public API, calls Rank and answers the elapsed nanoseconds of the whole.

The line protocol, on the driver's stdin / stdout (its one argument is the server address):

- ``load PATH``: read the workload file (``workload_file``) into the client's own values; answers ``ok``;
- ``rank``: one call, timed inside the driver (build + call + read the answer); answers the nanoseconds;
- ``quit``: exit.

The timing is the driver's own clock, so the pipe between the two processes is not in it.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.data import QUERY, REFERENCE_TIME, K, Workload
from memrank._gen.v1 import ranking_pb2 as pb

ROOT = Path(__file__).resolve().parent.parent


def _rfc3339(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat().replace("+00:00", "Z")


def request_dict(w: Workload) -> dict[str, Any]:
    """The workload as a user writes it: protobuf-JSON names, enum names, RFC 3339 times, no embeddings (they go as
    a matrix)."""
    cands: list[dict[str, Any]] = []
    for r in w.rows:
        c: dict[str, Any] = {"id": r.id, "layer": r.layer, "kind": r.kind, "content": r.content,
                             "retrievalScore": r.retrieval_score, "accessCount": r.access_count,
                             "source": pb.Source.Name(r.source), "safety": pb.SafetyStatus.Name(r.safety)}
        if r.importance is not None:
            c["importance"] = r.importance
        if r.created_at is not None:
            c["createdAt"] = _rfc3339(r.created_at)
        if r.last_accessed_at is not None:
            c["lastAccessedAt"] = _rfc3339(r.last_accessed_at)
        cands.append(c)
    return {"requestId": "bench", "query": QUERY, "profile": "default", "referenceTime": _rfc3339(REFERENCE_TIME),
            "budget": {"maxTokens": 4000, "maxItems": K}, "candidates": cands}


def workload_file(w: Workload, path: Path) -> Path:
    """The workload as the drivers read it: ``request_dict`` and the matrix as lists under ``embeddings``."""
    data = {**request_dict(w), "embeddings": [] if w.embeddings is None else w.embeddings.tolist()}
    path.write_text(json.dumps(data))
    return path


@dataclass(frozen=True)
class Spec:
    """How to build a client's driver (once, before timing) and the command that runs it."""

    build: tuple[tuple[str, ...], ...]  # commands run in ``cwd`` first
    run: Callable[[], list[str]]  # the command (after the build)
    cwd: Path
    needs: str  # the tool it needs on PATH


_GO, _TS, _JAVA = ROOT / "clients" / "go", ROOT / "clients" / "typescript", ROOT / "clients" / "java"
_TMP = Path(os.environ.get("TMPDIR", "/tmp"))
DRIVERS: dict[str, Spec] = {
    "go": Spec(build=(("go", "build", "-o", str(_TMP / "memrank-e2e-go"), "./bench"),),
               run=lambda: [str(_TMP / "memrank-e2e-go")], cwd=_GO, needs="go"),
    "ts": Spec(build=(("sh", "-c", "[ -d node_modules ] || npm ci --silent --no-audit --no-fund"),
                      ("npm", "run", "--silent", "build")), run=lambda: ["node", "dist/bench/e2e.js"], cwd=_TS,
               needs="node"),
    "java": Spec(build=(("mvn", "-o", "-B", "-q", "test-compile", "dependency:build-classpath",
                         "-Dmdep.outputFile=target/classpath.txt", "-Dmdep.includeScope=runtime"),),
                 run=lambda: ["java", "-cp", "target/classes:target/test-classes:"
                              + (_JAVA / "target" / "classpath.txt").read_text().strip(),
                              "dev.memrank.client.bench.E2e"], cwd=_JAVA, needs="mvn"),
}


def available(name: str) -> bool:
    """Whether the driver's toolchain is on PATH."""
    return shutil.which(DRIVERS[name].needs) is not None


class Driver:
    """One running driver process (a context manager)."""

    def __init__(self, name: str, address: str) -> None:
        spec = DRIVERS[name]
        for command in spec.build:
            subprocess.run(command, cwd=spec.cwd, check=True)
        self.proc = subprocess.Popen([*spec.run(), address], cwd=spec.cwd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)

    def ask(self, line: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline().strip()
        if not answer:
            raise RuntimeError(f"driver gave no answer to {line!r} (exit {self.proc.poll()})")
        return answer

    def load(self, path: Path) -> None:
        if (answer := self.ask(f"load {path}")) != "ok":
            raise RuntimeError(f"driver could not load {path}: {answer}")

    def rank(self) -> float:
        """One call; its seconds as the driver timed them."""
        return int(self.ask("rank")) / 1e9

    def __enter__(self) -> Driver:
        return self

    def __exit__(self, *_exc: object) -> None:
        with contextlib.suppress(RuntimeError, OSError):  # a driver that died already
            self.ask("quit")
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
