"""A bounded `ghz` load run against the live server: fixed concurrency and duration, RPS and quantiles."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

PROTO_DIR = Path(__file__).resolve().parent.parent / "proto"
GHZ_VERSION = "v0.121.0"
INSTALL = f"go install github.com/bojand/ghz/cmd/ghz@{GHZ_VERSION}"


def find_ghz() -> str | None:
    """The ghz binary on PATH or in the Go bin directory, or None."""
    found = shutil.which("ghz")
    if found:
        return found
    gobin = Path(os.environ.get("GOBIN") or Path(os.environ.get("GOPATH") or Path.home() / "go") / "bin") / "ghz"
    return str(gobin) if gobin.exists() else None


def run(target: str, data: bytes, seconds: float, concurrency: int) -> dict[str, object]:
    """Run ghz for ``seconds`` at ``concurrency`` (one connection each); its summary numbers."""
    ghz = find_ghz()
    if ghz is None:
        return {"skipped": f"ghz not installed ({INSTALL})"}
    with tempfile.TemporaryDirectory() as tmp:
        body = Path(tmp) / "request.bin"
        body.write_bytes(data)
        cmd = [ghz, "--insecure", "--proto", str(PROTO_DIR / "memrank/v1/ranking_service.proto"),
               "--import-paths", str(PROTO_DIR), "--call", "memrank.v1.RankingService.Rank",
               "--binary-file", str(body), "--concurrency", str(concurrency), "--connections", str(concurrency),
               "--duration", f"{seconds:g}s", "--timeout", "60s",
               "--format", "json", target]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 120, check=False)
    if out.returncode != 0 or not out.stdout.strip():
        return {"skipped": f"ghz failed ({out.returncode}): {out.stderr.strip()[-300:]}"}
    report = json.loads(out.stdout)
    quantiles = {f"p{int(q['percentage'])}": q["latency"] / 1e6 for q in report.get("latencyDistribution") or []}
    codes = report.get("statusCodeDistribution") or {}
    return {"rps": report["rps"], "count": report["count"], "seconds": report["total"] / 1e9,
            "concurrency": concurrency, "average_ms": report["average"] / 1e6, "quantiles_ms": quantiles,
            "status_codes": codes, "version": GHZ_VERSION}
