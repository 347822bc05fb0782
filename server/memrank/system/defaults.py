"""Process-wide defaults, set by ``apply()`` before numpy loads (the first thing the ``memrank`` command's ``main``
and the bench do; importing this module changes nothing).

- **One BLAS/OpenMP thread per process.** A memrank process scores one request at a time on one core;
  parallelism comes from worker processes (``server.workers``), which inherit this environment. A
  multi-threaded BLAS would spin its threads against the other workers on a busy host (the similarity
  rows of the diversity pass are BLAS matvecs).
- **glibc keeps freed memory for the next request** (``M_TRIM_THRESHOLD`` 128 MiB, ``M_MMAP_THRESHOLD``
  32 MiB). A request's columns are numpy arrays of 100 KiB to a few MiB that live for one call. With
  glibc's defaults a call often gets them from fresh pages (the heap top is trimmed back to the kernel
  after a call, or a block is its own ``mmap``), and the kernel faults and zeroes them again: a third of
  ``score()`` at 400 candidates in the bench process, 7-18 % of a live server's CPU per call at 400 to
  1,600 candidates (``python -m bench.malloc_ab``; ``bench/README.md``). With these settings the pages
  stay in the process and are reused. The cost: up to 128 MiB of freed heap is held rather than
  returned, so resident memory stays near the largest request's peak.
- **One malloc arena** (``M_ARENA_MAX`` 1). glibc gives each handler thread that meets a busy arena
  an arena of its own (up to 8 per core), and each keeps the memory of the requests its thread handled: a
  server's peak crept from 545 to 937 MiB over 8 maximal requests in a row, each on another thread; with
  two arenas, and the free memory handed back after each big request (``release_freed_memory``), it
  settled at 660 MiB. With two, grpc's receive of a request (the event loop's thread) and its handling
  (a handler thread) still used different arenas, so the memory freed by the one was not reused by the
  other and a call's peak RSS was the sum of both: one arena lowered the growth of a 400 x 384 call after
  a warm-up from 5.0 to 3.8 MiB (median of 4 fresh servers each, alternated) and of a 1,600 x 384 call
  from 17.0 to 15.6 MiB, and measured no slower (server CPU per call 1.00x at 400 x 384 and 0.96x at
  1,600 x 384, alternated call for call; throughput at concurrency 8 1.04x). The handler threads take
  turns on the GIL, so the one arena is rarely contended.

Both are defaults only: a variable already set in the environment (``OPENBLAS_NUM_THREADS``,
``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_ARENA_MAX``, ...) wins. The malloc
settings are applied to this process with ``mallopt`` and passed to child processes (spawned workers)
through the environment, which glibc reads at start-up. Other C libraries (musl) are left alone.
"""

from __future__ import annotations

import ctypes
import os
import platform

TRIM_THRESHOLD = 128 << 20  # bytes of free heap top kept before glibc returns memory to the kernel
MMAP_THRESHOLD = 32 << 20  # blocks below this come from the heap (glibc's maximum for this setting)
ARENA_MAX = 1  # malloc arenas shared by every thread (the event loop's receive and the handlers)

# mallopt parameter numbers (glibc malloc.h) and the environment variables glibc reads for them.
_MALLOPT = {"MALLOC_TRIM_THRESHOLD_": (-1, TRIM_THRESHOLD), "MALLOC_MMAP_THRESHOLD_": (-3, MMAP_THRESHOLD),
            "MALLOC_ARENA_MAX": (-8, ARENA_MAX)}


def apply() -> dict[str, int]:
    """Set this process's defaults (see the module docstring); returns the malloc settings ``mallopt`` took
    (empty when none did: not glibc, or each was already set in the environment). Call it before numpy loads;
    a second call changes nothing (the first one's settings are in the environment then)."""
    for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(variable, "1")
    return _keep_freed_memory()


def _keep_freed_memory() -> dict[str, int]:
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return {}
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return {}
    applied = {}
    for variable, (param, value) in _MALLOPT.items():
        if variable in os.environ:
            continue  # the caller's setting, already read by glibc at start-up
        if mallopt(ctypes.c_int(param), ctypes.c_int(value)) == 1:
            os.environ[variable] = str(value)  # for spawned worker processes
            applied[variable] = value
    return applied


def _trimmer() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None


def release_freed_memory() -> None:
    """Hand the heap's free memory back to the kernel (glibc ``malloc_trim(0)``; nothing elsewhere).

    The server calls it after a request of ``TRIM_AFTER_BYTES`` or more: such a call frees hundreds of
    MiB, which the thresholds above would keep, and the next big call would then add its peak on top.
    Small calls keep their pages, as above.
    """
    if _malloc_trim is not None:
        _malloc_trim(ctypes.c_size_t(0))


TRIM_AFTER_BYTES = 8 << 20  # request size from which a call's freed memory is handed back

_malloc_trim = _trimmer()  # a symbol lookup, no setting
