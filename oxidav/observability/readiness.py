"""``Readiness``: is the database reachable, and the blob store — asked cheaply, answered fast.

Each part (``database``, ``blob_store``) has one probe: a ``SELECT 1`` on a pooled connection,
the store's ``health_check`` (a probe file written and read back on a local disk, a
``HEAD`` of the bucket on S3). A probe runs in a thread of its own and is waited for at most
``timeout`` seconds; its answer is kept for ``fresh_seconds``. So however many clients ask at
once, at most one probe per part is in flight and one runs per ``fresh_seconds``: an
unauthenticated ``/readyz`` costs a lookup, not a database round trip. A probe that hangs (a
database server that stopped answering) keeps its part ``timeout`` until it returns; it is not
started again meanwhile.

A part's state is ``ok``, ``failed`` or ``timeout``; the reason of a failure is logged
(``oxidav.readiness``, at most once per probe), never sent to the client.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sqlalchemy import text

from oxidav.blobs.store import BlobStore
from oxidav.db import Database

log = logging.getLogger("oxidav.readiness")

#: How long a request waits for a probe's answer, in seconds.
PROBE_TIMEOUT = 2.0
#: How long a probe's answer is reused, in seconds.
FRESH_SECONDS = 1.0
OK, FAILED, TIMEOUT = "ok", "failed", "timeout"


class _Probe:
    def __init__(self, name: str, check: Callable[[], None], fresh_seconds: float) -> None:
        self.name = name
        self.check = check
        self.fresh_seconds = fresh_seconds
        self._lock = threading.Lock()
        self._state: str | None = None
        self._at = 0.0
        self._done: threading.Event | None = None

    def _run(self, done: threading.Event) -> None:
        try:
            self.check()
            state = OK
        except Exception as exc:
            log.warning("readiness: %s check failed: %s", self.name, exc)
            state = FAILED
        with self._lock:
            self._state, self._at = state, time.monotonic()
            self._done = None
        done.set()

    def start(self) -> threading.Event | None:
        """Start a probe unless a fresh answer is known (None) or one runs already; return
        the event set when the running probe ends."""
        with self._lock:
            if self._state is not None and time.monotonic() - self._at < self.fresh_seconds:
                return None
            if self._done is None:
                done = self._done = threading.Event()
                threading.Thread(
                    target=self._run, args=(done,), name=f"oxidav-ready-{self.name}", daemon=True
                ).start()
            return self._done

    def state(self) -> str:
        with self._lock:
            return self._state or TIMEOUT


@dataclass(frozen=True)
class Report:
    parts: Mapping[str, str]

    @property
    def ready(self) -> bool:
        return all(state == OK for state in self.parts.values())


class Readiness:
    """The readiness of ``db`` and ``store``; ``report()`` is safe to call from any thread."""

    def __init__(
        self,
        db: Database,
        store: BlobStore,
        timeout: float = PROBE_TIMEOUT,
        fresh_seconds: float = FRESH_SECONDS,
    ) -> None:
        self.timeout = timeout
        self._probes = [
            _Probe("database", lambda: _ping_database(db), fresh_seconds),
            _Probe("blob_store", store.health_check, fresh_seconds),
        ]

    def report(self) -> Report:
        waits = [(probe, probe.start()) for probe in self._probes]
        deadline = time.monotonic() + self.timeout
        parts: dict[str, str] = {}
        for probe, done in waits:
            if done is not None and not done.wait(max(0.0, deadline - time.monotonic())):
                parts[probe.name] = TIMEOUT
            else:
                parts[probe.name] = probe.state()
        return Report(parts)


def _ping_database(db: Database) -> None:
    with db.engine.connect() as connection:
        connection.execute(text("SELECT 1"))


__all__ = ["FAILED", "OK", "TIMEOUT", "Readiness", "Report"]
