"""Who uses this database right now: servers and maintenance commands, by heartbeat.

Each ``oxidav serve`` process registers a ``server`` row in ``process_presence`` (the workers of
a supervisor under its pid, so it counts as one process) before it accepts a request, renews
its ``heartbeat_at`` every ``INTERVAL`` seconds from a daemon thread and removes the row when
it stops. A command that must not run beside a server (the switch of
``blobs migrate``) registers a ``maintenance`` row the same way. A row whose heartbeat is older
than ``STALE_AFTER`` belongs to a process that died (SIGKILL, power loss) and counts as gone.

Mutual exclusion: each side first commits its own row, then looks for live rows of the other
kind, and withdraws if it finds one. Whatever the interleaving, the later of the two reads sees
the other's committed row, so a server and a maintenance command never both go ahead (both may
back off, which is safe). This holds for one SQLite file and for many processes on PostgreSQL
provided their clocks agree to within a few seconds (heartbeats are stamped by each process).

A process paused for longer than ``STALE_AFTER`` (a suspended VM) counts as gone while
paused; its heartbeat thread logs an error when it finds its row purged.

The same table keeps one lasting row of kind ``store`` once ``blobs migrate`` has switched
stores: the URL every server must write to from then on. A server configured with another one
refuses to start (a host whose configuration was not updated would write to the old store).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Table, delete, insert, select, update
from sqlalchemy.orm import Session

from oxidav.db import Database, utcnow
from oxidav.db.models.presence import ProcessPresence

log = logging.getLogger("oxidav.presence")

#: Seconds between two heartbeats.
INTERVAL = 5.0
#: A row whose heartbeat is older than this many seconds is a dead process's.
STALE_AFTER = 20.0

SERVER = "server"
MAINTENANCE = "maintenance"
STORE = "store"
_STORE_ID = "blob_store"

_presence: Table = ProcessPresence.__table__  # type: ignore[assignment]


@dataclass(frozen=True)
class Holder:
    """One live process as another one sees it."""

    id: str
    kind: str
    host: str
    pid: int
    what: str

    def __str__(self) -> str:
        return f"{self.host} pid {self.pid}"


class ServersRunningError(Exception):
    """A maintenance step was refused: servers use the database."""

    def __init__(self, holders: list[Holder], message: str) -> None:
        super().__init__(message)
        self.holders = holders


class MaintenanceRunningError(Exception):
    """A server start was refused: a maintenance command holds the database."""


def live(db: Database, kind: str, now: datetime | None = None) -> list[Holder]:
    """The processes of ``kind`` whose heartbeat is fresh."""
    cutoff = (now or utcnow()) - timedelta(seconds=STALE_AFTER)
    with db.read() as session:
        rows = session.execute(
            select(
                _presence.c.id,
                _presence.c.kind,
                _presence.c.host,
                _presence.c.pid,
                _presence.c.what,
            )
            .where(_presence.c.kind == kind, _presence.c.heartbeat_at > cutoff)
            .order_by(_presence.c.started_at)
        ).all()
    holders: dict[tuple[str, int], Holder] = {}
    for row in rows:  # the workers of one supervisor register under its pid: one process
        holder = Holder(*row)
        holders.setdefault((holder.host, holder.pid), holder)
    return list(holders.values())


class Presence:
    """This process's row: registered, kept fresh by a heartbeat thread, removed on ``stop``."""

    def __init__(
        self,
        db: Database,
        kind: str,
        what: str,
        interval: float = INTERVAL,
        pid: int | None = None,
    ) -> None:
        self.db = db
        self.pid = pid or os.getpid()
        self.kind = kind
        self.what = what[:2048]
        self.interval = interval
        self.id = uuid.uuid4().hex
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def register(self) -> None:
        """Commit this process's row (and purge the rows of dead processes)."""
        now = utcnow()
        with self.db.write() as session:
            session.execute(
                delete(_presence).where(
                    _presence.c.kind.in_((SERVER, MAINTENANCE)),
                    _presence.c.heartbeat_at < now - timedelta(seconds=STALE_AFTER),
                )
            )
            self._insert(session, now)

    def _insert(self, session: Session, now: datetime) -> None:
        session.execute(
            insert(_presence).values(
                id=self.id,
                kind=self.kind,
                host=socket.gethostname()[:255],
                pid=self.pid,
                what=self.what,
                started_at=now,
                heartbeat_at=now,
            )
        )

    def beat(self) -> None:
        """Renew the heartbeat; re-register (with an error logged) if the row was purged."""
        now = utcnow()
        with self.db.write() as session:
            result = session.execute(
                update(_presence).where(_presence.c.id == self.id).values(heartbeat_at=now)
            )
            if result.rowcount == 0:  # type: ignore[attr-defined]
                log.error(
                    "this %s's presence row was purged (no heartbeat for %gs: paused or cut off"
                    " from the database?); registering again",
                    self.kind,
                    STALE_AFTER,
                )
                self._insert(session, now)

    def start(self) -> None:
        """Start the heartbeat thread (after ``register``)."""
        self._thread = threading.Thread(
            target=self._loop, name=f"oxidav-presence-{self.kind}", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop the heartbeat and remove the row (a failure only logs: the row goes stale)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.interval + 10)
            self._thread = None
        try:
            with self.db.write() as session:
                session.execute(delete(_presence).where(_presence.c.id == self.id))
        except Exception:
            log.exception("could not remove this %s's presence row", self.kind)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.beat()
            except Exception:  # the database is away: try again next time
                log.exception("presence heartbeat failed")


def _plural(holders: list[Holder]) -> str:
    return ", ".join(str(h) for h in holders)


def record_blob_store(db: Database, url: str) -> None:
    """Remember ``url`` as the blob store every server must use (``blobs migrate``)."""
    now = utcnow()
    with db.write() as session:
        session.execute(delete(_presence).where(_presence.c.id == _STORE_ID))
        session.execute(
            insert(_presence).values(
                id=_STORE_ID,
                kind=STORE,
                host=socket.gethostname()[:255],
                pid=os.getpid(),
                what=url[:2048],
                started_at=now,
                heartbeat_at=now,
            )
        )


def recorded_blob_store(db: Database) -> str | None:
    """The URL of the last ``record_blob_store``, if any."""
    with db.read() as session:
        url: str | None = session.execute(
            select(_presence.c.what).where(_presence.c.id == _STORE_ID)
        ).scalar_one_or_none()
    return url


def register_server(db: Database, blob_store: str, supervisor: int | None = None) -> Presence:
    """Register this server process (a worker: under its ``supervisor``'s pid, so one
    ``oxidav serve`` counts once) and start its heartbeat; raise
    ``MaintenanceRunningError`` (row withdrawn) while a maintenance command holds the data, or
    when ``blob_store`` is not the store ``blobs migrate`` moved the blobs to."""
    recorded = recorded_blob_store(db)
    if recorded is not None and recorded != blob_store:
        raise MaintenanceRunningError(
            f"`oxidav blobs migrate` moved the blobs to {recorded}, but this server's "
            f"blob_store is {blob_store}: set blob_store to {recorded}"
        )
    presence = Presence(db, SERVER, blob_store, pid=supervisor)
    presence.register()
    busy = live(db, MAINTENANCE)
    if busy:
        presence.stop()
        holder = busy[0]
        raise MaintenanceRunningError(
            f"{holder.what!r} is running on {holder} and needs the server stopped; "
            "start oxidav again when it has finished"
        )
    presence.start()
    return presence


@contextmanager
def exclusive(db: Database, command: str, refusal: str) -> Iterator[Presence]:
    """Run the body as the only user of the data: register a maintenance row with a heartbeat,
    and raise ``ServersRunningError`` (``refusal`` followed by who runs) if a server or
    another maintenance command is live."""
    presence = Presence(db, MAINTENANCE, command)
    presence.register()
    others = [h for h in live(db, MAINTENANCE) if h.id != presence.id]
    servers = live(db, SERVER)
    if servers or others:
        presence.stop()
        who = servers or others
        kind = "server process(es)" if servers else "maintenance command(s)"
        raise ServersRunningError(who, f"{refusal} ({len(who)} {kind} running: {_plural(who)})")
    presence.start()
    try:
        yield presence
    finally:
        presence.stop()


__all__ = [
    "INTERVAL",
    "MAINTENANCE",
    "SERVER",
    "STALE_AFTER",
    "STORE",
    "Holder",
    "MaintenanceRunningError",
    "Presence",
    "ServersRunningError",
    "exclusive",
    "live",
    "record_blob_store",
    "recorded_blob_store",
    "register_server",
]
