"""Sink ``s3``: the writer process's records as gzipped JSON-lines objects in a bucket, partitioned by hour.

Keys: ``<prefix>dt=YYYY-MM-DD/hour=HH/<host>-<pid>-<start>-<n>.jsonl.gz`` (decisions.batches: the partition is
the records' ``server_time``, UTC; ``n`` counts this writer's objects, so no key is written twice). The writer's
loop hands each formatted line to ``S3Sink.write``, which returns at once; a thread of the writer uploads each
object once it is sealed (full, or ``s3_batch_seconds`` old), with ``s3_retries`` more attempts after a failure,
backing off from RETRY_FIRST to RETRY_MAX seconds. Each failed attempt is reported (``x <error code>``:
``memrank_decision_log_write_failures_total{error}``) and logged as the file sink's are.

Each record gets one report to its server (decisions.process), so ``memrank_decision_log_records_total`` counts
records in the bucket, and every record that never reaches it is in ``memrank_decision_log_dropped_total``:

* ``upload_failed``: its object still failed after every retry;
* ``buffer_full``: uploads were failing and the writer already held ``s3_buffer_bytes`` of records;
* ``lost_after_ack``: still held when the shutdown's ``s3_close_seconds`` ran out (or with a writer killed).

Credentials come from the standard AWS chain (environment, web identity / IRSA, ~/.aws, instance metadata);
boto3 is the optional extra ``memrank-sidecar[s3]``.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import threading
import time
from typing import IO, Any

from memrank.config import DecisionLogSettings
from memrank.core.errors import ConfigError
from memrank.decisions.batches import Batch, Batches, partition, writer_name
from memrank.decisions.retry import Retry, report_line

log = logging.getLogger("memrank.decisions")
RETRY_FIRST, RETRY_MAX = 0.5, 30.0  # seconds between attempts at an upload: doubling up to 30 s
FAILING = "decision log upload failed; retrying (s3_retries), then its records are dropped and counted"


def parse_url(url: str) -> tuple[str, str]:
    """(bucket, key prefix ending in "/" unless empty) of ``s3://bucket/prefix``."""
    bucket, _, prefix = url.removeprefix("s3://").partition("/")
    prefix = prefix.strip("/")
    return bucket, f"{prefix}/" if prefix else ""


MISSING = "decision_log.sink: s3 needs boto3, which is not installed: pip install 'memrank-sidecar[s3]'"


def require_boto3() -> None:
    """ConfigError naming the extra when boto3 cannot be imported (looked up, not imported: the server's
    workers never load it, only their writer processes)."""
    if importlib.util.find_spec("boto3") is None:
        raise ConfigError(MISSING)


def s3_client(settings: DecisionLogSettings) -> Any:
    """A boto3 S3 client for the settings (no retries of its own: the sink's govern); ConfigError naming the
    extra when boto3 is not installed, naming the key when the endpoint is refused."""
    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        raise ConfigError(MISSING) from None
    session = boto3.session.Session()
    region = settings.s3_region or session.region_name or "us-east-1"
    config = Config(retries={"total_max_attempts": 1}, connect_timeout=5, read_timeout=20,
                    s3={"addressing_style": "path"} if settings.s3_endpoint else {})
    try:
        return session.client("s3", endpoint_url=settings.s3_endpoint, region_name=region, config=config)
    except ValueError as exc:
        raise ConfigError(f"decision_log.s3_endpoint: {settings.s3_endpoint!r}: {exc}") from None


def error_name(exc: Exception) -> str:
    """The failure's label: S3's error code (AccessDenied, NoSuchBucket), else botocore's class name."""
    response = getattr(exc, "response", None)
    code = response.get("Error", {}).get("Code") if isinstance(response, dict) else None
    return str(code or type(exc).__name__)


class S3Sink:
    """Records batched into objects and uploaded by a thread of their own (see the module's docstring)."""

    def __init__(self, settings: DecisionLogSettings, reports: IO[bytes]) -> None:
        assert settings.s3_url is not None
        self._bucket, self._prefix = parse_url(settings.s3_url)
        self._client = s3_client(settings)
        self._reports = reports
        self._retry = Retry(reports, FAILING)
        self._retries, self._close_seconds = settings.s3_retries, settings.s3_close_seconds
        self._name = writer_name(time.time())
        self._objects = 0
        self._batches = Batches(settings.s3_batch_bytes, settings.s3_batch_records, settings.s3_batch_seconds,
                                settings.s3_buffer_bytes)
        self._cond = threading.Condition()
        self._pending = 0  # records taken and not yet reported (uploaded or dropped)
        self._deadline = math.inf  # monotonic: set by close()
        self._closing = threading.Event()
        self._abandoned = False  # close() gave up on the thread and reported what it held
        self._thread = threading.Thread(target=self._run, name="memrank-decision-log-s3", daemon=True)
        self._thread.start()

    def write(self, kind: str, server_time: float, line: bytes) -> None:
        """Hold one record for its object; report it dropped (``buffer_full``) when the budget is spent."""
        with self._cond:
            taken = self._batches.add(partition(server_time), kind, line, time.monotonic())
            if taken:
                self._pending += 1
                self._cond.notify()  # a sealed object to send, or a new open one whose age to watch
        if not taken:
            report_line(self._reports, b"l buffer_full\n")

    def close(self) -> None:
        """Seal and upload everything held, for up to ``s3_close_seconds``; what is left then is reported
        ``lost_after_ack``."""
        with self._cond:
            self._deadline = time.monotonic() + self._close_seconds
            self._cond.notify()
        self._closing.set()
        self._thread.join(self._close_seconds + 1)  # an upload in flight ends by its own timeouts
        with self._cond:
            self._abandoned = True
            left, self._pending = self._pending, 0
        if left:
            log.error("decision log: records not uploaded by the end of s3_close_seconds", extra={
                "records": left, "s3_close_seconds": self._close_seconds})
            report_line(self._reports, b"l lost_after_ack\n" * left)

    def _run(self) -> None:
        while (batch := self._next()) is not None:
            if time.monotonic() >= self._deadline:
                self._done(batch, b"l lost_after_ack\n" * batch.records)
            else:
                self._done(batch, self._upload(batch))

    def _next(self) -> Batch | None:
        """The next object to upload, waiting for one; None once closing and nothing is held."""
        with self._cond:
            while True:
                closing = self._deadline < math.inf
                batch = self._batches.take(time.monotonic(), everything=closing)
                if batch is not None or closing:
                    return batch
                due = self._batches.next_due()
                self._cond.wait(None if due is None else max(0.0, due - time.monotonic()))

    def _upload(self, batch: Batch) -> bytes:
        """Put the object (retrying); its records' reports: written, or dropped as ``upload_failed``."""
        key = f"{self._prefix}{batch.partition}/{self._name}-{self._objects:06d}.jsonl.gz"
        self._objects += 1
        body = batch.body()
        delay, reason = RETRY_FIRST, b"upload_failed"
        for attempt in range(self._retries + 1):
            try:
                self._client.put_object(Bucket=self._bucket, Key=key, Body=body, ContentType="application/gzip")
            except Exception as exc:  # botocore's errors (connection, timeout, S3's own) and any other
                self._retry.failed(exc, error_name(exc))
                left = self._deadline - time.monotonic()
                if left <= 0:  # the shutdown's time ran out: held to the end, as the objects not yet tried
                    reason = b"lost_after_ack"
                    break
                if attempt == self._retries:
                    break
                if self._closing.is_set():
                    time.sleep(min(delay, left))
                elif self._closing.wait(min(delay, left)):  # close() cuts a back-off short: try again now
                    continue
                delay = min(2 * delay, RETRY_MAX)
                continue
            self._retry.succeeded()
            return batch.reports()
        log.error("decision log object dropped", extra={
            "key": key, "records": batch.records, "attempts": attempt + 1, "reason": reason.decode()})
        return (b"l " + reason + b"\n") * batch.records

    def _done(self, batch: Batch, reports: bytes) -> None:
        with self._cond:
            self._batches.release(batch)
            if self._abandoned:  # close() already counted these
                return
            self._pending -= batch.records
        report_line(self._reports, reports)
