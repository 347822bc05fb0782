"""SIGHUP, SIGTERM and SIGINT held from a server process's first instruction until its handlers are in place.

The default action of each ends the process: one that came before a memrank process had installed its
handlers (a reload storm while a worker restarts, a pod deleted as it starts, a SIGTERM just after "ready")
killed it with no drain (issue #41). So a server process blocks them first thing (``hold``) and unblocks
them (``release``) once its handlers are installed: a signal that came meanwhile waits and is handled then,
none is lost. A blocked mask is inherited across fork and exec (a handler is not), so the processes started
while it is held (workers, decision-log writers, multiprocessing's resource tracker) run with it from their
first instruction too; each installs its handlers (or ignores the signal) and, if it handles them, releases.

The interpreter runs before that first instruction (0.1-0.6 s), so the image and the chart start memrank
under ``env --block-signal=HUP,TERM,INT``, which blocks them before its exec (docs/operations/reliability.md,
Start): the process then begins with them blocked, ``hold`` changes nothing and ``release`` lifts the block it
inherited as well, delivering what came during the interpreter's start.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing import resource_tracker

HELD = frozenset({signal.SIGHUP, signal.SIGTERM, signal.SIGINT})


def hold() -> set[int | signal.Signals]:
    """Block the held signals in this thread (and in the threads and processes it starts); the mask before."""
    return signal.pthread_sigmask(signal.SIG_BLOCK, HELD)


def release() -> None:
    """Unblock them: any that came while held is delivered to the handlers now installed."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD)


@contextmanager
def held() -> Iterator[None]:
    """Hold them for the block (a child started in it inherits the mask), then restore the mask before."""
    before = hold()
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def start_resource_tracker() -> None:
    """Start multiprocessing's resource tracker (a no-op once it runs) with the signals held, and hold them again
    after: starting it unblocks SIGTERM and SIGINT in the calling thread, whatever the mask was before (CPython's
    fix for bpo-33613 blocks them around the tracker's spawn, then unblocks them). Its first use (a ``Queue``,
    a worker's start) would otherwise lift the hold before the handlers are in, and a SIGTERM that came while
    the server loaded would end it (exit -15, issue #41), as would any until its handlers are installed."""
    with held():
        resource_tracker.ensure_running()
