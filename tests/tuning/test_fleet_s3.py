"""`tune --log s3://bucket/prefix/` against a real S3 server (tests/support/s3server.py): the same counts, lines
and tuned profile as the same logs read from local files, and from a single file by the in-memory reader."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from memrank.tuning import TuningError, fleet
from tests.support.s3server import S3Server
from tests.tuning.test_fleet_logs import DEFAULT, live_log, write_partitions

pytest.importorskip("duckdb", reason="the fleet extra is not installed")
pytest.importorskip("s3fs", reason="the fleet extra is not installed")

__all__ = ["live_log"]  # the fixture, shared


@pytest.fixture
def aws(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Server:
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    return s3_server


def upload(server: S3Server, root: Path, prefix: str) -> None:
    s3 = server.client()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        s3.put_object(Bucket=server.bucket, Key=f"{prefix}/{path.relative_to(root)}", Body=path.read_bytes())


def test_s3_prefix_reads_as_the_local_directory(aws: S3Server, tmp_path: Path) -> None:
    write_partitions(tmp_path)
    upload(aws, tmp_path, "hand")
    local, local_stats, local_report = fleet.load([str(tmp_path)], DEFAULT)
    remote, stats, report = fleet.load([f"s3://{aws.bucket}/hand/"], DEFAULT, s3_endpoint=aws.endpoint)
    local_stats.torn = [t.replace(str(tmp_path), f"s3://{aws.bucket}/hand") for t in local_stats.torn]
    assert stats == local_stats and (stats.decisions, stats.labelled, stats.duplicates) == (7, 4, 1)
    assert (report.files, report.duplicate_decisions, report.usable) == (3, 1, 2)
    assert report.bad == [b.replace(str(tmp_path), f"s3://{aws.bucket}/hand") for b in local_report.bad]
    assert report.bad[0] == f"s3://{aws.bucket}/hand/dt=2026-12-06/hour=10/pod-b-0.jsonl.gz:3: torn record (cut short)"
    for x, y in zip(remote.queries, local.queries, strict=True):
        assert (x.key, x.grades.tolist(), x.features.tolist()) == (y.key, y.grades.tolist(), y.features.tolist())
    globbed, _, g = fleet.load([f"s3://{aws.bucket}/hand/dt=2026-12-06/hour=1*/*.gz"], DEFAULT,
                               s3_endpoint=aws.endpoint)
    # the two .gz files, not pod-a-0.jsonl: d2 is missing, d1 is there (its second delivery, in hour 11)
    assert (g.files, [q.key for q in globbed.queries]) == (2, ["s1/t1"])


def test_cli_tunes_from_s3_as_from_the_single_file(aws: S3Server, tmp_path: Path, live_log: Path) -> None:
    """The live server's log as gzip partitions on S3 (one partition uploaded twice, as a retry would) tunes to
    the profile the in-memory reader (no fleet extra) fits on the original file."""
    lines = live_log.read_text().splitlines(keepends=True)
    s3 = aws.client()
    for i, start in enumerate(range(0, len(lines), 9)):
        body = gzip.compress("".join(lines[start:start + 9]).encode())
        s3.put_object(Bucket=aws.bucket, Key=f"live/dt=2026-12-06/hour={i:02d}/pod-a-{i}.jsonl.gz", Body=body)
    s3.put_object(Bucket=aws.bucket, Key="live/dt=2026-12-06/hour=00/pod-a-0-retry.jsonl.gz",
                  Body=gzip.compress("".join(lines[:9]).encode()))
    common = ["--out", "OUT", "--folds", "2", "--no-progress", "--model", "linear", "--holdout", "0"]  # no gate
    env = os.environ | aws.env()

    def tune(log: str, out: Path, *extra: str, without_duckdb: bool = False) -> str:
        args = ["tune", "--log", log, *extra, *[str(out) if a == "OUT" else a for a in common]]
        code = ("import sys; sys.modules['duckdb'] = None; from memrank.cli import main; sys.exit(main(sys.argv[1:]))"
                if without_duckdb else "import sys; from memrank.cli import main; sys.exit(main(sys.argv[1:]))")
        run = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env)
        assert run.returncode == 0, run.stderr
        return run.stdout

    reference = tune(str(live_log), tmp_path / "ref.yaml", without_duckdb=True)
    assert "memrank tune: read " not in reference  # the in-memory reader: no engine report line
    out = tune(f"s3://{aws.bucket}/live/", tmp_path / "s3.yaml", "--s3-endpoint", aws.endpoint)
    # 40 lines (decision, feedback, ...) in 5 partitions of 9, the first again: 5 decisions and 4 feedback twice
    assert "20 decisions, 24 feedback records, 20 decisions with feedback, 0 without (ignored), 4 repeated" in out
    assert "read 6 files in" in out and "dropped 5 duplicate decision records" in out
    assert "20 queries in 4 groups" in out
    ref_doc = yaml.safe_load((tmp_path / "ref.yaml").read_text())["profiles"]["tuned"]
    s3_doc = yaml.safe_load((tmp_path / "s3.yaml").read_text())["profiles"]["tuned"]
    assert s3_doc["signals"] == ref_doc["signals"]


def test_an_empty_prefix_is_a_clear_error(aws: S3Server) -> None:
    with pytest.raises(TuningError, match=rf"--log s3://{aws.bucket}/nothing-here/: no \*\.jsonl or \*\.jsonl\.gz "
                                          "object under it"):
        fleet.load([f"s3://{aws.bucket}/nothing-here/"], DEFAULT, s3_endpoint=aws.endpoint)
    with pytest.raises(TuningError, match=r"--log s3://no-such-bucket-here/x/:"):
        fleet.load(["s3://no-such-bucket-here/x/"], DEFAULT, s3_endpoint=aws.endpoint)
