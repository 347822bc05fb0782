"""memrank_signal_value's collector against prometheus_client's own Histogram: the same exposition in one
process, the same sums as prometheus_client's multiprocess files over workers, exact under threads, growth and
a worker's death."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from memrank.metrics.signal_values import SignalValues, WorkersSignalValues
from memrank.metrics.table import Table, read_tables

BOUNDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)  # what the dashboards and reference files read
DOC = "Signal values of the candidates that passed the gates, raw and normalized."
LABELS = ("signal", "form", "profile", "layer")
SIGNALS, FORMS, LAYERS = ("relevance", "recency"), ("raw", "normalized"), ("durable", "session")
Cells = dict[tuple[str, str, str, str], list[float]]


def bucket(value: float) -> int:
    """Prometheus' bucket of a value: the first bound >= it, else +Inf (index 10)."""
    return next((i for i, b in enumerate(BOUNDS) if value <= b), len(BOUNDS))


def calls(seed: int, n: int, profile: str = "default") -> list[Cells]:
    """Calls' values per (signal, form, profile, layer), multiples of 1/16 (their sums are exact in any order),
    on and off the bounds 0.5 and 1.0, below 0 and above 1; the last layer's normalized recency stays empty."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        cells: Cells = {}
        for s in SIGNALS:
            for f in FORMS:
                for layer in LAYERS:
                    empty = (s, f, layer) == ("recency", "normalized", "session")
                    cells[(s, f, profile, layer)] = [] if empty else (rng.integers(-4, 24, 7) / 16).tolist()
        out.append(cells)
    return out


def add_call(values: SignalValues, cells: Cells) -> None:
    """One call's bucket counts and sums, counted here by hand, added as the recorder adds them."""
    profile = next(iter(cells))[2]
    counts = np.zeros((len(SIGNALS) * len(FORMS), len(LAYERS), len(BOUNDS) + 1))
    sums = np.zeros((len(SIGNALS) * len(FORMS), len(LAYERS)))
    for (s, f, _, layer), vs in cells.items():
        row, col = SIGNALS.index(s) * 2 + FORMS.index(f), LAYERS.index(layer)
        for v in vs:
            counts[row, col, bucket(v)] += 1
        sums[row, col] = sum(vs)
    values.add((profile, LAYERS, SIGNALS), counts, sums)


def observed(histogram: Histogram, cells_list: list[Cells]) -> None:
    """The same values through Histogram.observe, one at a time (every cell's child made, empty ones too)."""
    for cells in cells_list:
        for key, vs in cells.items():
            child = histogram.labels(*key)
            for v in vs:
                child.observe(v)


def without_created(text: str) -> str:
    return re.sub(r"(memrank_signal_value_created\{[^}]*\}) \S+", r"\1 T", text)


def test_one_process_exposition_is_the_histograms_text() -> None:
    """Names, HELP, TYPE, labels, le bounds, values and order: the text is the Histogram's, created times aside."""
    data = calls(1, 3)
    registry = CollectorRegistry()
    mine = SignalValues(registry)
    for cells in data:
        add_call(mine, cells)
    reference = CollectorRegistry()
    observed(Histogram("memrank_signal_value", DOC, LABELS, buckets=BOUNDS, registry=reference), data)
    got, want = generate_latest(registry).decode(), generate_latest(reference).decode()
    assert without_created(got) == without_created(want)
    assert got.count("_bucket{") == 8 * 11 and 'le="1.0"' in got and 'le="+Inf"' in got


_WORKER = """
import sys, json
from prometheus_client import Histogram
h = Histogram("memrank_signal_value", sys.argv[1], ("signal", "form", "profile", "layer"),
              buckets=tuple(json.loads(sys.argv[2])))
for key, values in json.loads(sys.stdin.read()):
    child = h.labels(*key)
    for v in values:
        child.observe(v)
"""


def multiprocess_reference(directory: Path, per_worker: list[list[Cells]]) -> str:
    """prometheus_client's multiprocess mode: each worker a process observing its values, the files merged."""
    import json

    for data in per_worker:
        env = dict(os.environ, PROMETHEUS_MULTIPROC_DIR=str(directory))
        body = json.dumps([[list(k), v] for cells in data for k, v in cells.items()])
        subprocess.run([sys.executable, "-c", _WORKER, DOC, json.dumps(BOUNDS)], input=body, text=True, env=env,
                       check=True, timeout=60)
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(directory))  # type: ignore[no-untyped-call]
    return generate_latest(registry).decode()


def parsed(text: str) -> tuple[list[str], dict[tuple[str, frozenset[tuple[str, str]]], float]]:
    heads = [line for line in text.splitlines() if line.startswith("#")]
    samples = {(s.name, frozenset(s.labels.items())): s.value for f in text_string_to_metric_families(text)
               for s in f.samples}
    return heads, samples


def test_workers_tables_sum_as_prometheus_multiprocess_histograms(tmp_path: Path) -> None:
    """Two workers (two profiles, shared label sets): the supervisor's family equals the multiprocess merge."""
    per_worker = [calls(2, 3) + calls(3, 1, "support"), calls(4, 2)]
    ours = tmp_path / "ours"
    ours.mkdir()
    for data in per_worker:
        worker = SignalValues(CollectorRegistry(), str(ours))
        for cells in data:
            add_call(worker, cells)
    supervisor = CollectorRegistry()
    WorkersSignalValues(supervisor, str(ours))
    (tmp_path / "ref").mkdir()
    got = parsed(generate_latest(supervisor).decode())
    want = parsed(multiprocess_reference(tmp_path / "ref", per_worker))
    assert got == want
    assert len(want[1]) == (8 + 8) * 13  # 8 default and 8 support series of 11 buckets, count and sum


@pytest.mark.parametrize("directory", [False, True], ids=["memory", "file"])
def test_concurrent_calls_lose_no_count(tmp_path: Path, directory: bool) -> None:
    registry = CollectorRegistry()
    values = SignalValues(registry, str(tmp_path) if directory else None)
    cells = calls(5, 1)[0]

    def work() -> None:
        for _ in range(300):
            add_call(values, cells)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    key = ("relevance", "raw", "default", "durable")
    labels = dict(zip(LABELS, key, strict=True))
    want_count = 2400 * len(cells[key])
    assert registry.get_sample_value("memrank_signal_value_count", labels) == want_count
    assert registry.get_sample_value("memrank_signal_value_sum", labels) == 2400 * sum(cells[key])
    if directory:
        supervisor = CollectorRegistry()
        WorkersSignalValues(supervisor, str(tmp_path))
        assert supervisor.get_sample_value("memrank_signal_value_count", labels) == want_count


def test_a_growing_table_reads_whole_at_any_moment(tmp_path: Path) -> None:
    """A file replaced by larger copies while a reader reads: every read parses, no row is ever ahead of its
    writes or behind an earlier read."""
    table = Table(3, str(tmp_path), "t", rows=2, label_bytes=40)
    done = threading.Event()
    reads: list[dict[tuple[str, ...], list[float]]] = []
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            while not done.is_set():
                reads.append({key: row.tolist() for key, row in read_tables(str(tmp_path), "t", 3)})
        except BaseException as exc:  # handed to the test thread
            errors.append(exc)

    thread = threading.Thread(target=reader)
    thread.start()
    for i in range(300):
        rows = table.rows([(f"k{i}", "é"), (f"k{i // 2}", "é")])
        table.add(rows[:1], np.array([[1.0, float(i), 2.0]]))
    done.set()
    thread.join()
    assert not errors and len(reads) > 1
    final = {key: row.tolist() for key, row in read_tables(str(tmp_path), "t", 3)}
    assert final == {(f"k{i}", "é"): [1.0, float(i), 2.0] for i in range(300)}
    for seen in reads:
        assert all(row in ([0.0, 0.0, 0.0], final[key]) for key, row in seen.items())
    assert [p.name.endswith(".rows") for p in tmp_path.iterdir()] == [True]  # no copy left behind


_DYING = """
import os, signal, sys
import numpy as np
from prometheus_client import CollectorRegistry
from memrank.metrics.signal_values import SignalValues
values = SignalValues(CollectorRegistry(), sys.argv[1])
values.add(("default", ("session",), ("relevance",)), np.arange(22.0).reshape(2, 1, 11), np.array([[2.5], [4.0]]))
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_workers_counts_stay_counted(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-c", _DYING, str(tmp_path)], timeout=60, check=False,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert run.returncode == -signal.SIGKILL
    supervisor = CollectorRegistry()
    WorkersSignalValues(supervisor, str(tmp_path))
    raw = {"signal": "relevance", "form": "raw", "profile": "default", "layer": "session"}
    assert supervisor.get_sample_value("memrank_signal_value_bucket", {**raw, "le": "0.3"}) == 0 + 1 + 2
    assert supervisor.get_sample_value("memrank_signal_value_count", raw) == sum(range(11))
    assert supervisor.get_sample_value("memrank_signal_value_count", {**raw, "form": "normalized"}) == sum(
        range(11, 22))
    assert supervisor.get_sample_value("memrank_signal_value_sum", raw) == 2.5
