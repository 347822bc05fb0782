"""``tune --log`` out of core: many compressed files, local or on S3, to a sampled Dataset in bounded memory.

Two passes of DuckDB over the files (``index``: ids and labels only, the join and the sample;
``columns_of_log``: the chosen decisions' candidate columns), with DuckDB held to ``engine_memory``
and spilling to a temporary directory past it. What Python holds is the sample's flat numpy arrays,
so memory is set by ``--sample-queries`` and the engine limit, not by the size of the logs; time
grows with the bytes read (each file is read twice). The rules are the ones of ``tuning.logs``
(which stays the in-memory reference); ``index`` states the two it adds: duplicates dropped, labels
merged in ``server_time`` order.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from memrank.core.profile import Profile
from memrank.tuning import badlines, columns_of_log, index, sources
from memrank.tuning.dataset import Dataset, Query, TuningError
from memrank.tuning.logs import LogStats, describe

ENGINE_MEMORY_MB = 1024  # DuckDB's own limit; it spills past it


@dataclass
class ReadReport:
    """What was read, skipped, deduplicated and sampled, for the report line."""

    files: int = 0
    bad: list[str] = field(default_factory=list)  # "file:line: why" of each skipped line
    unlocated: int = 0  # lines the engine skipped that the line check found nothing wrong with (field types)
    duplicate_decisions: int = 0
    usable: int = 0  # labelled decisions with the base's signals and a relevant label, before sampling
    sampled: int = 0  # of them, kept
    budget: int | None = None
    seconds: float = 0.0  # both passes, wall time


def load(arguments: list[str], base: Profile, budget: int | None = None, seed: int = 0,
         engine_memory_mb: int = ENGINE_MEMORY_MB, s3_endpoint: str | None = None
         ) -> tuple[Dataset, LogStats, ReadReport]:
    """The labelled decisions of the logs as a (sampled) Dataset over the base's signals, and what was found."""
    duckdb = sources.require("duckdb")
    if budget is not None and budget < 1:
        raise TuningError(f"--sample-queries {budget}: expected 1 or more")
    fs = sources.s3_filesystem(s3_endpoint) if any(sources.is_s3(a) for a in arguments) else None
    files = sources.expand(arguments, fs)
    report, stats = ReadReport(files=len(files), budget=budget), LogStats()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="memrank-tune-") as spill:
        con = duckdb.connect(config={"memory_limit": f"{engine_memory_mb}MB", "temp_directory": spill,
                                     "threads": 2, "preserve_insertion_order": False})
        try:
            if fs is not None:
                con.register_filesystem(fs)
            _passes(con, files, base, budget, seed, stats, report, fs)
            queries = _fetch(con, files, base, stats)
        except duckdb.Error as exc:
            raise TuningError(f"reading --log: {exc}") from None
        finally:
            con.close()
    report.sampled, report.seconds = len(queries), time.monotonic() - started
    if not queries:
        raise TuningError(f"no labelled decision to tune on in {', '.join(arguments)}: {describe(stats)}")
    return Dataset(base.name, tuple(s.name for s in base.signals), tuple(queries), stats.nothing_relevant), \
        stats, report


def _passes(con: Any, files: list[str], base: Profile, budget: int | None, seed: int, stats: LogStats,
            report: ReadReport, fs: Any) -> None:
    bad = index.build(con, files)
    for name, count in sorted(bad.items(), key=lambda kv: files.index(kv[0])):
        found = badlines.locate(name, fs)
        report.bad.extend(found)
        report.unlocated += max(0, count - len(found))
    torn = " torn record (cut short)"
    stats.torn = [b.removesuffix(":" + torn) for b in report.bad if b.endswith(torn)]  # describe() names them
    (copies,), = con.execute("SELECT coalesce(sum(copies), 0) FROM d").fetchall()
    index.join(con, base, stats)
    report.duplicate_decisions = int(copies) - stats.decisions
    report.usable = index.sample(con, budget, seed)


def _fetch(con: Any, files: list[str], base: Profile, stats: LogStats) -> list[Query]:
    queries, missing = columns_of_log.fetch(con, files, base)
    stats.other_signals += missing
    return queries


def summary(report: ReadReport) -> str:
    """One line: files read, lines skipped (where), duplicates dropped, the sample against its budget."""
    parts = [f"read {report.files} file{'s' if report.files != 1 else ''} in {report.seconds:.1f} s"]
    other = [b for b in report.bad if not b.endswith("torn record (cut short)")]  # torn: in describe()'s line
    skipped = len(other) + report.unlocated
    if skipped:
        shown = "; ".join(other[:5]) + ("; ..." if len(other) > 5 else "")
        extra = f"{report.unlocated} with fields of the wrong type" if report.unlocated else ""
        parts.append(f"skipped {skipped} other unreadable line{'s' if skipped != 1 else ''} "
                     f"({'; '.join(p for p in (shown, extra) if p)})")
    parts.append(f"dropped {report.duplicate_decisions} duplicate decision record"
                 f"{'s' if report.duplicate_decisions != 1 else ''}")
    cap = "no --sample-queries cap" if report.budget is None else f"--sample-queries {report.budget}"
    parts.append(f"sampled {report.sampled} of {report.usable} usable labelled decisions ({cap})")
    return ", ".join(parts)


def read(arguments: list[str], base: Profile, budget: int | None, seed: int,
         s3_endpoint: str | None = None) -> tuple[Dataset, list[str]]:
    """`tune --log`: the Dataset and the lines saying what was read. Without the fleet extra, plain local files
    (no glob, directory, .gz or s3://) are read in memory by ``tuning.logs``, as before the extra existed."""
    from pathlib import Path

    plain = all(not sources.is_s3(a) and not a.endswith(".gz") and Path(a).is_file() for a in arguments)
    if plain and budget is None and not _have_duckdb():
        from memrank.tuning.logs import load_logs

        dataset, stats = load_logs([Path(a) for a in arguments], base)
        return dataset, [describe(stats)]
    dataset, stats, report = load(arguments, base, budget, seed, s3_endpoint=s3_endpoint)
    return dataset, [describe(stats), summary(report)]


def _have_duckdb() -> bool:
    try:
        import duckdb  # noqa: F401
    except ImportError:
        return False
    return True
