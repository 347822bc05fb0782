"""``--log`` arguments as the list of files to read: local paths, globs, directories and ``s3://`` prefixes.

A file is read as it is named; a directory or an ``s3://bucket/prefix/`` is every ``*.jsonl`` and
``*.jsonl.gz`` under it (recursively: the S3 sink's ``dt=YYYY-MM-DD/hour=HH/`` partitions); a glob
(``logs/**/*.jsonl.gz``, ``s3://bucket/logs/dt=2026-12-*/**``) is what it matches. Files are read in
the order of the arguments, each argument's files sorted by name (so partitions read oldest first);
a file named twice is read once. gzip is told by the ``.gz`` suffix. S3 is reached through s3fs
(credentials from the usual AWS settings; ``--s3-endpoint`` for an S3-compatible server); an argument
that matches nothing is an error naming it.
"""

from __future__ import annotations

import glob
import gzip
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memrank.tuning.dataset import TuningError

SUFFIXES = (".jsonl", ".jsonl.gz")
EXTRA = "pip install 'memrank-sidecar[fleet]'"
_MAGIC = set("*?[")


class MissingFleetExtra(TuningError):
    """duckdb (or s3fs for s3:// logs) is not installed."""


def require(module: str) -> Any:
    """Import a module of the fleet extra, or say which extra brings it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingFleetExtra(f"reading --log with {module} needs the fleet extra ({EXTRA})") from None


def is_s3(name: str) -> bool:
    """True for an ``s3://`` URL."""
    return name.startswith("s3://")


def s3_filesystem(endpoint: str | None = None) -> Any:
    """An s3fs filesystem with credentials and region from the usual AWS settings (environment, ~/.aws); at
    ``endpoint`` (an S3-compatible server, path-style addressing) when given."""
    s3fs = require("s3fs")
    if endpoint is None:
        return s3fs.S3FileSystem(anon=False, use_listings_cache=False)
    return s3fs.S3FileSystem(anon=False, use_listings_cache=False, endpoint_url=endpoint,
                             config_kwargs={"s3": {"addressing_style": "path"}})


def expand(arguments: list[str], fs: Any = None) -> list[str]:
    """The files the ``--log`` arguments name, in reading order; TuningError for one that names nothing."""
    files: list[str] = []
    for arg in arguments:
        found = _s3(arg, fs) if is_s3(arg) else _local(arg)
        if not found:
            where = "no *.jsonl or *.jsonl.gz object under it" if is_s3(arg) else "no such file, or nothing matches"
            raise TuningError(f"--log {arg}: {where}")
        files.extend(f for f in found if f not in files)
    return files


def _wanted(name: str) -> bool:
    return name.endswith(SUFFIXES)


def _local(arg: str) -> list[str]:
    path = Path(arg)
    if _MAGIC & set(arg):
        return sorted(p for p in glob.glob(arg, recursive=True) if Path(p).is_file())
    if path.is_dir():
        return sorted(str(p) for p in path.rglob("*") if p.is_file() and _wanted(p.name))
    return [arg] if path.is_file() else []


def _s3(arg: str, fs: Any) -> list[str]:
    fs = fs if fs is not None else s3_filesystem()
    bare = arg.removeprefix("s3://")
    try:
        if _MAGIC & set(bare):
            keys = [k for k in fs.glob(bare) if not fs.isdir(k)]
        elif bare.endswith("/") or not fs.isfile(bare):
            keys = [k for k in fs.find(bare) if _wanted(k)]
        else:
            keys = [bare]
    except FileNotFoundError:
        keys = []
    except OSError as exc:  # no such bucket, refused credentials, endpoint down: s3fs says which
        raise TuningError(f"--log {arg}: {exc}") from None
    return sorted(f"s3://{k}" for k in keys)


def lines(name: str, fs: Any = None) -> Iterator[str]:
    """The text lines of one log file, local or on S3, gunzipped when its name ends in .gz."""
    opener = (fs or s3_filesystem()).open if is_s3(name) else open
    with opener(name.removeprefix("s3://") if is_s3(name) else name, "rb") as raw:
        stream = gzip.GzipFile(fileobj=raw) if name.endswith(".gz") else raw
        yield from io.TextIOWrapper(stream, encoding="utf-8", errors="replace")
