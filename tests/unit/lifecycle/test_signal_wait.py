"""A worker's wait for its stop signal survives a second signal arriving inside the first one's handling: it
returns, and the process ends, instead of deadlocking (found when a `memrank serve` under `timeout` got SIGTERM
from both the supervisor and `timeout`, which signals the whole process group, and one worker hung forever)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

# threading.Event.set with a second signal delivered while it holds its lock: what happens when two signals
# come back to back and the handler sets an Event. The wait must not rely on anything that can deadlock there.
CHILD = """
import signal, threading
def set_with_a_signal_inside(self):
    with self._cond:
        self._flag = True
        signal.raise_signal(signal.SIGINT)
        self._cond.notify_all()
threading.Event.set = set_with_a_signal_inside
from memrank.lifecycle.server_process import _handle_signals, _wait_for_signal
got = _handle_signals()
print('waiting', flush=True)
print(_wait_for_signal(got), flush=True)
"""


def test_a_signal_inside_the_first_ones_handling_does_not_deadlock_the_wait() -> None:
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.stdout is not None and proc.stdout.readline().strip() == "waiting"
    os.kill(proc.pid, signal.SIGTERM)
    try:
        out, _ = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("the wait deadlocked on a signal that came while the first was being handled")
    assert proc.returncode == 0
    assert int(out.strip()) == signal.SIGTERM
