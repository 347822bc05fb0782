"""The memrank command's process settings: one BLAS thread per process, and glibc keeping freed memory for
the next request; each unless the environment says otherwise."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

PROBE = ("import memrank.cli, os, numpy as np\n"
         "a = np.ones((600, 600), np.float32)\n"
         "for _ in range(3): a @ a\n"
         "print(os.environ['OPENBLAS_NUM_THREADS'], len(os.listdir('/proc/self/task')))\n")

# One "request": arrays of 160-560 KiB that live for the call, like a batch's columns. Prints the minor page
# faults per call after a warm-up, and the malloc settings memrank.system.defaults applied.
FAULTS = ("import os, sys, resource\n"
          "if sys.argv[1] == 'memrank':\n"
          "    import memrank.cli\n"
          "import numpy as np\n"
          "def call():\n"
          "    arrays = [np.ones(n) for n in (30_000, 50_000, 70_000, 20_000, 60_000)]\n"
          "    return sum(a.size for a in arrays)\n"
          "for _ in range(5): call()\n"
          "f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
          "for _ in range(100): call()\n"
          "import memrank.system.defaults as p\n"
          "print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / 100, sorted(p.malloc_settings()),\n"
          "      os.environ.get('MALLOC_TRIM_THRESHOLD_'))\n")


def _clean(**env: str) -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS") and not k.startswith("MALLOC_")}
    return {**kept, **env}


def _probe(**env: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", PROBE], env=_clean(**env), capture_output=True, text=True,
                         check=True, timeout=60)
    return out.stdout.split()


def _faults(mode: str, **env: str) -> tuple[float, str, str]:
    out = subprocess.run([sys.executable, "-c", FAULTS, mode], env=_clean(**env), capture_output=True, text=True,
                         check=True, timeout=60)
    faults, rest = out.stdout.split(" ", 1)
    settings, trim = rest.rsplit(" ", 1)
    return float(faults), settings, trim.strip()


def test_the_command_loads_numpy_with_one_blas_thread() -> None:
    assert _probe() == ["1", "1"]  # the setting, and no BLAS worker threads after a matrix product


def test_an_explicit_setting_wins() -> None:
    assert _probe(OPENBLAS_NUM_THREADS="2")[0] == "2"


glibc = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the malloc settings are glibc's")


@glibc
def test_freed_request_memory_is_reused_without_page_faults() -> None:
    default, _, _ = _faults("plain")
    tuned, settings, trim = _faults("memrank")
    # glibc's defaults hand the trimmed heap top back to the kernel after every call: each call faults much of
    # its 1.8 MiB (450 pages) of arrays in again (about 260 pages measured here). Kept, the pages are reused.
    assert default > 100
    assert tuned < 5
    assert settings == "['MALLOC_ARENA_MAX', 'MALLOC_MMAP_THRESHOLD_', 'MALLOC_TRIM_THRESHOLD_']"
    assert trim == str(128 << 20)  # passed on to spawned workers through the environment


@glibc
def test_a_malloc_setting_in_the_environment_wins() -> None:
    faults, settings, trim = _faults("memrank", MALLOC_TRIM_THRESHOLD_="0")
    assert settings == "['MALLOC_ARENA_MAX', 'MALLOC_MMAP_THRESHOLD_']"
    assert trim == "0"
    assert faults > 100  # trimming at every free: the caller's choice, kept
