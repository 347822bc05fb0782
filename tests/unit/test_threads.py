"""The memrank command runs BLAS on one thread per process, unless the environment says otherwise."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = ("import memrank.cli, os, numpy as np\n"
         "a = np.ones((600, 600), np.float32)\n"
         "for _ in range(3): a @ a\n"
         "print(os.environ['OPENBLAS_NUM_THREADS'], len(os.listdir('/proc/self/task')))\n")


def _probe(**env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", PROBE], env={**clean, **env}, capture_output=True, text=True,
                         check=True, timeout=60)
    return out.stdout.split()


def test_the_command_loads_numpy_with_one_blas_thread() -> None:
    assert _probe() == ["1", "1"]  # the setting, and no BLAS worker threads after a matrix product


def test_an_explicit_setting_wins() -> None:
    assert _probe(OPENBLAS_NUM_THREADS="2")[0] == "2"
