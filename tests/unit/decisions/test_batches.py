"""Sink s3's batching (memrank.decisions.batches): partitions by the hour of the records' time, objects sealed
at their limits, the byte budget, the object body and its reports."""

from __future__ import annotations

import gzip

from memrank.decisions.batches import Batches, partition, writer_name
from memrank.decisions.s3sink import parse_url


def test_partition_is_the_utc_date_and_hour_of_the_time() -> None:
    # 1_700_000_000 s = 19675 days + 80_000 s: 2023-11-14 (day 19675 of the epoch) at 22:13:20 UTC
    assert partition(1_700_000_000.0) == "dt=2023-11-14/hour=22"
    assert partition(19675 * 86400 + 23 * 3600 + 3599.999) == "dt=2023-11-14/hour=23"
    assert partition(19676 * 86400.0) == "dt=2023-11-15/hour=00"


def test_writer_name_is_host_pid_and_start_to_the_millisecond() -> None:
    assert writer_name(1_700_000_000.25, host="pod-7b9c/x y", pid=41) == "pod_7b9c_x_y-41-20231114T221320250Z"


def test_the_url_gives_the_bucket_and_a_prefix_ending_in_a_slash() -> None:
    assert parse_url("s3://logs/fleet/decisions/") == ("logs", "fleet/decisions/")
    assert parse_url("s3://logs/fleet") == ("logs", "fleet/")
    assert parse_url("s3://logs") == ("logs", "")


def test_an_object_is_sealed_at_its_record_limit_and_each_hour_has_its_own() -> None:
    b = Batches(max_bytes=1 << 20, max_records=2, max_seconds=60, buffer_bytes=1 << 20)
    assert b.add("h1", "decision", b"a\n", now=0) and b.add("h2", "feedback", b"b\n", now=0)
    assert b.take(now=1) is None  # neither full nor 60 s old
    assert b.add("h1", "feedback", b"c\n", now=2)
    sealed = b.take(now=2)
    assert sealed is not None and (sealed.partition, sealed.lines) == ("h1", [b"a\n", b"c\n"])
    assert gzip.decompress(sealed.body()) == b"a\nc\n"
    assert sealed.reports() == b"d\nf\n"
    assert b.next_due() == 0 + 60  # h2's, opened at 0
    assert b.take(now=59.9) is None
    late = b.take(now=60)
    assert late is not None and late.lines == [b"b\n"]


def test_an_object_is_sealed_at_its_byte_limit() -> None:
    b = Batches(max_bytes=10, max_records=100, max_seconds=60, buffer_bytes=100)
    assert b.add("h", "decision", b"12345\n", now=0)
    assert not b.ready()
    assert b.add("h", "decision", b"6789\n", now=0)  # 6 + 5 = 11 bytes >= 10
    assert b.ready()


def test_the_budget_counts_open_and_sealed_lines_until_released() -> None:
    b = Batches(max_bytes=8, max_records=100, max_seconds=60, buffer_bytes=20)
    assert b.add("h", "decision", b"x" * 9, now=0)  # sealed: 9 >= 8
    assert b.add("h", "decision", b"y" * 9, now=0)  # sealed: 18 bytes held
    assert not b.add("h", "decision", b"z" * 3, now=0)  # 18 + 3 > 20: refused
    first = b.take(now=0)
    assert first is not None
    assert not b.add("h", "decision", b"z" * 3, now=0)  # taken, not yet released: still held
    b.release(first)
    assert b.held == 9 and b.add("h", "decision", b"z" * 3, now=0)


def test_everything_seals_every_open_object() -> None:
    b = Batches(max_bytes=100, max_records=100, max_seconds=3600, buffer_bytes=1000)
    b.add("h1", "decision", b"a\n", now=0)
    b.add("h2", "decision", b"b\n", now=0)
    taken = [b.take(now=1, everything=True), b.take(now=1, everything=True), b.take(now=1, everything=True)]
    assert [t.partition if t else None for t in taken] == ["h1", "h2", None]
