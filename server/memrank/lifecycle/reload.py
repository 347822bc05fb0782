"""Profiles reloaded without a restart: on SIGHUP, and when the config file changes (a ConfigMap update).

What a reload changes: the profiles and the layers (and with them the policy version that responses,
receipts and decision records name), and the shadow profile (``shadow``, which names one of them). The
settings are loaded again from the same sources as at start (the file, the ``MEMRANK_*`` variables, the
flags); a file that does not load is refused with a logged error and the profiles in force keep serving.
Other keys (addresses, limits, security, ...) that differ are logged as needing a restart and not applied.
The swap is one assignment: a call reads the settings once when it starts, so calls in flight finish on
the profiles they started with.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import replace

from memrank.config import Settings, SettingsSource, config_file, policy_version_of
from memrank.core.errors import ConfigError
from memrank.grpc.running import Running
from memrank.metrics.declare import Metrics

log = logging.getLogger("memrank.reload")
FileMark = tuple[int, int, int, int] | None
APPLIED = ("profiles", "layers", "shadow")


def _mark(path: str | None) -> FileMark:
    """What changes when the file is replaced or written: device, inode, size, mtime (of the file a
    symbolic link chain ends at, as a ConfigMap mount's ..data swap replaces it)."""
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


class ProfileReloader:
    """Reloads ``source``'s profiles into a running server (``get``/``put``: the settings in force)."""

    def __init__(self, source: SettingsSource, get: Callable[[], Settings], put: Callable[[Settings], None],
                 metrics: Metrics, poll_seconds: float, env: dict[str, str] | None = None) -> None:
        self._source, self._get, self._put, self._metrics = source, get, put, metrics
        named = config_file(source.path, os.environ if env is None else env)
        self.path = named[0] if named else None
        self._poll = poll_seconds
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._seen = _mark(self.path)
        self._thread: threading.Thread | None = None
        metrics.policy_info.labels(policy_version=get().policy_version).set(1)

    def reload(self, why: str) -> str:
        """Load the settings again and apply their profiles and layers; "ok", "unchanged" or "error"."""
        with self._lock:
            old = self._get()
            try:
                new = self._source.load()
            except ConfigError as exc:
                self._metrics.config_reloads.labels(result="error").inc()
                log.error("reload refused: the profiles in force keep serving",
                          extra={"why": why, "pid": os.getpid(), "error": str(exc),
                                 "policy_version": old.policy_version})
                return "error"
            # a worker's settings name its resolved worker count; the file may say 0 (auto)
            loaded = replace(new, server=replace(new.server, workers=old.server.workers)).as_dict()
            was = old.as_dict()
            ignored = sorted(k for k, v in loaded.items() if k not in APPLIED and v != was.get(k))
            if ignored:
                log.warning("reload: these sections changed and need a restart; not applied",
                            extra={"why": why, "sections": ignored})
            if new.profiles == old.profiles and new.layers == old.layers and new.shadow == old.shadow:
                self._metrics.config_reloads.labels(result="unchanged").inc()
                log.info("reload: profiles unchanged", extra={"why": why, "pid": os.getpid(),
                                                             "policy_version": old.policy_version})
                return "unchanged"
            applied = replace(old, profiles=new.profiles, layers=new.layers, shadow=new.shadow,
                              policy_version=policy_version_of(old.limits, new.layers, new.profiles))
            self._put(applied)
            self._metrics.policy_info.labels(policy_version=old.policy_version).set(0)
            self._metrics.policy_info.labels(policy_version=applied.policy_version).set(1)
            self._metrics.config_reloads.labels(result="ok").inc()
            log.info("reloaded", extra={"why": why, "pid": os.getpid(), "profiles": sorted(applied.profiles),
                                        "shadow": applied.shadow.profile,
                                        "policy_version": applied.policy_version,
                                        "was": old.policy_version})
            return "ok"

    def start(self) -> None:
        """Watch the config file (every ``poll_seconds``; 0 or no file: SIGHUP only)."""
        if self.path is None or self._poll <= 0:
            return
        self._thread = threading.Thread(target=self._watch, name="memrank-config-watch", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(self._poll):
            mark = _mark(self.path)
            if mark != self._seen and mark is not None:
                self._seen = mark
                self.reload("config file changed")

    def close(self) -> None:
        self._stop.set()


def start_reloader(running: Running, source: SettingsSource | None, settings: Settings) -> ProfileReloader | None:
    """The profile reloader of a started server (None without a settings source: in-process embedding)."""
    service = running.service
    if source is None or service is None:
        return None
    reloader = ProfileReloader(source, lambda: service.settings, service.use, service.metrics,
                               settings.server.config_poll_seconds)
    reloader.start()
    return reloader
