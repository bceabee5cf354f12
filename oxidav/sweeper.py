"""The background sweep: storage nobody references any more is reclaimed without an operator.

One pass drops upload sessions idle for ``sessions.STALE_AFTER`` (abandoned chunked uploads,
with their chunk references) and then collects blob manifests and chunks unreferenced for
``sweep_grace_seconds`` (``blobs.gc.collect_some``: what a refused or abandoned upload
ingested), and deletes the failed logins older than the throttles keep
(``authz.authn.failures.purge_old``) and the push protocol's staging rows older than the
grace period (``nextcloud.push.holdings``: gc owns their chunks by then). Each pass does
bounded work: at most ``SESSIONS_PER_PASS`` sessions and ``BATCHES_PER_PASS`` gc transactions
of each kind; whatever is left waits for the next pass.
Several server processes on one database may sweep at once: the purge of a session is
idempotent and gc skips rows another transaction holds (``skip_locked``), and the grace
period keeps the bytes of an ingest still under way (the rules of ``blobs.gc``). ``oxidav
blobs gc`` remains for what a pass leaves out (stored files without a row).

The thread is started by ``oxidav.server.run_server`` (in one worker only) and stopped before
the services close; a test drives ``run_once`` directly.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta

from oxidav.authz.authn.failures import purge_old
from oxidav.blobs.gc import collect_some
from oxidav.nextcloud.push.holdings import forget_staged_before, staged_after
from oxidav.nextcloud.uploads.sessions import purge_stale
from oxidav.services import Services

log = logging.getLogger("oxidav.sweeper")

#: Upload sessions purged per pass at most.
SESSIONS_PER_PASS = 64
#: Transactions per pass (of ``blobs.gc.GC_BATCH`` rows each) for manifests and for chunks.
BATCHES_PER_PASS = 8


@dataclass(frozen=True)
class SweepReport:
    """What one pass did."""

    sessions_purged: int
    manifests_removed: int
    chunks_removed: int
    bytes_freed: int
    login_failures_removed: int = 0
    staged_chunks_forgotten: int = 0


class Sweeper:
    """Runs ``run_once`` every ``settings.sweep_interval_seconds`` on a daemon thread."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def run_once(self, now: datetime | None = None) -> SweepReport:
        """One bounded pass (``now``: the clock, for tests)."""
        services = self.services
        chain = services.blobs
        purged = purge_stale(services.db, chain, now=now, limit=SESSIONS_PER_PASS)
        gc = collect_some(
            services.db,
            chain.store,
            services.settings.sweep_grace_seconds,
            BATCHES_PER_PASS,
            now=now,
        )
        window = services.settings.auth_failure_window
        failures = purge_old(services.db, window, None if now is None else now.timestamp())
        grace = services.settings.sweep_grace_seconds
        cutoff = staged_after(grace) if now is None else now - timedelta(seconds=grace)
        staged = forget_staged_before(services.db, cutoff)
        return SweepReport(
            purged, gc.manifests_removed, gc.chunks_removed, gc.bytes_freed, failures, staged
        )

    def start(self) -> None:
        """Start the thread (nothing when ``sweep_interval_seconds`` is 0)."""
        if self.services.settings.sweep_interval_seconds <= 0 or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, name="oxidav-sweeper", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Ask the thread to stop after its current pass and wait for it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _loop(self) -> None:
        interval = self.services.settings.sweep_interval_seconds
        while not self._stop.wait(interval):
            try:
                report = self.run_once()
            except Exception:  # a failed pass (database away): log it, try again next time
                log.exception("sweep pass failed")
                continue
            if any((report.sessions_purged, report.manifests_removed, report.chunks_removed)):
                log.info("sweep: %s", report)
