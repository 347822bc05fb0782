"""The memrank command's process settings: one BLAS thread per process, and glibc keeping freed memory for
the next request; each unless the environment says otherwise. ``defaults.apply()`` sets them, called first by
the command's ``main``; importing the module sets nothing."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

# The command's entry (main) with --version, which exits after applying the settings; then numpy, a matrix
# product, and a spawned child (as a worker is): what each sees.
PROBE = ("import contextlib, os, subprocess, sys, memrank.cli\n"
         "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(None):\n"
         "    memrank.cli.main(['--version'])\n"
         "import numpy as np\n"
         "a = np.ones((600, 600), np.float32)\n"
         "for _ in range(3): a @ a\n"
         "show = 'import os; print(os.environ.get(\"MALLOC_TRIM_THRESHOLD_\"))'\n"
         "child = subprocess.run([sys.executable, '-c', show], capture_output=True, text=True).stdout.strip()\n"
         "print(os.environ['OPENBLAS_NUM_THREADS'], len(os.listdir('/proc/self/task')), child)\n")

# apply() in a fresh process: what mallopt took, and the environment it leaves.
APPLY = ("import json, os, memrank.system.defaults as d\n"
         "before = os.environ.get('MALLOC_TRIM_THRESHOLD_')\n"
         "first, second = sorted(d.apply()), sorted(d.apply())\n"
         "print(json.dumps([first, second, before, os.environ.get('MALLOC_TRIM_THRESHOLD_')]))\n")


def _clean(**env: str) -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS") and not k.startswith("MALLOC_")}
    return {**kept, **env}


def _run(code: str, **env: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code], env=_clean(**env), capture_output=True, text=True,
                         check=True, timeout=60)
    return out.stdout.split()


def test_the_command_loads_numpy_with_one_blas_thread() -> None:
    assert _run(PROBE)[:2] == ["1", "1"]  # the setting, and no BLAS worker threads after a matrix product


def test_an_explicit_setting_wins() -> None:
    assert _run(PROBE, OPENBLAS_NUM_THREADS="2")[0] == "2"


def test_importing_the_module_sets_nothing() -> None:
    code = "import os, memrank.cli, memrank.system.defaults\nprint(os.environ.get('OPENBLAS_NUM_THREADS'))\n"
    assert _run(code) == ["None"]


glibc = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the malloc settings are glibc's")


@glibc
def test_mallopt_takes_the_settings_and_workers_inherit_them() -> None:
    took, again, before, after = json.loads(" ".join(_run(APPLY)))
    assert took == ["MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"]  # mallopt returned 1
    assert again == []  # a second call changes nothing: the first one's settings are in the environment
    assert (before, after) == (None, str(128 << 20))
    assert _run(PROBE)[2] == str(128 << 20)  # a process the command starts (a worker) is given them


@glibc
def test_a_malloc_setting_in_the_environment_wins() -> None:
    assert json.loads(" ".join(_run(APPLY, MALLOC_TRIM_THRESHOLD_="0"))) == [
        ["MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_"], [], "0", "0"]
    assert _run(PROBE, MALLOC_TRIM_THRESHOLD_="0")[2] == "0"
