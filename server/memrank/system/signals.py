"""SIGHUP, SIGTERM and SIGINT held from a server process's first instruction until its handlers are in place.

The default action of each ends the process: one that came before a memrank process had installed its
handlers (a reload storm while a worker restarts, a pod deleted as it starts, a SIGTERM just after "ready")
killed it with no drain (issue #41). So a server process blocks them first thing (``hold``) and unblocks
them (``release``) once its handlers are installed: a signal that came meanwhile waits and is handled then,
none is lost. A blocked mask is inherited across fork and exec (a handler is not), so the processes started
while it is held (workers, decision-log writers, multiprocessing's resource tracker) run with it from their
first instruction too; each installs its handlers (or ignores the signal) and, if it handles them, releases.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

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
