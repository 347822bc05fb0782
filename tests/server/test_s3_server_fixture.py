"""The S3 test server (tests/support/s3server.py) speaks S3 to boto3: put, list by prefix, get, and keeps its
objects across a restart on the same port."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.s3server import S3Server


def test_objects_put_are_listed_by_prefix_and_read_back(s3_server: S3Server) -> None:
    s3 = s3_server.client()
    for key in ("fixture/b", "fixture/a/1", "other/c"):
        s3.put_object(Bucket=s3_server.bucket, Key=key, Body=key.encode())
    assert s3_server.keys("fixture/") == ["fixture/a/1", "fixture/b"]
    assert s3_server.get("fixture/a/1") == b"fixture/a/1"


def test_a_stopped_server_refuses_and_a_restarted_one_has_its_objects(tmp_path: Path) -> None:
    server = S3Server.launch(tmp_path / "s3")
    try:
        server.client().put_object(Bucket=server.bucket, Key="k", Body=b"v")
        server.stop()
        with pytest.raises(Exception, match="Could not connect"):
            server.client().head_bucket(Bucket=server.bucket)
        server.start()
        assert server.get("k") == b"v"
    finally:
        server.close()
