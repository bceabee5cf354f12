"""Garbage collection: remove manifests and chunks unreferenced for longer than a grace period.

One run, in three steps, each in short batched transactions:

1. *Adopt* stored blobs that have no chunk row (bytes left by a crash between a write and its
   row, or by an aborted gc): they get an unreferenced row stamped now, and from then on are
   ordinary orphans.
2. Collect manifests with refcount 0 whose ``orphaned_at`` is older than the grace period:
   their entries are subtracted from the chunk refcounts (a chunk reaching 0 is stamped
   ``orphaned_at = now``, so it gets a grace period of its own), then the rows go.
3. Collect chunks with refcount 0 and an expired ``orphaned_at``: the rows are deleted and the
   blobs removed from the store *inside the same transaction*. An ingest that wants one of those
   chunks registers its intent on the row first, and that upsert waits for this transaction
   (PostgreSQL row lock, SQLite write lock) — so the bytes it then writes are never deleted by a
   gc that had already decided to. If the store delete fails, the transaction rolls back; the
   rows of blobs already deleted stay at refcount 0, which an ingest never trusts (it rewrites
   unreferenced chunks), and the next gc finishes the job.

The grace period (default one hour, like git's ``gc.pruneExpire``) must exceed the longest
ingest: a chunk an ingest found referenced, and relied on, could otherwise be collected before
that ingest commits (the ingest then fails cleanly with ``BlobChainConflictError``). A grace of 0
is only safe while nothing writes: ``oxidav blobs gc`` runs a grace below ``LIVE_MIN_GRACE``
only under ``oxidav.presence.exclusive`` (no server running, none starting).

Each step is a loop of short transactions; ``stop`` is looked at between them, so an
interrupted run leaves nothing half done, and the next run simply starts again.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Table, case, delete, func, literal, select, update

from oxidav.blobs import catalog
from oxidav.blobs.store import BlobNotFoundError, BlobStore
from oxidav.db import Database, UTCDateTime, utcnow
from oxidav.db.models.blobs import BlobChunk, BlobManifest, BlobManifestChunk
from oxidav.progress import Meter, StopFlag

DEFAULT_GRACE_SECONDS = 3600.0
#: The shortest grace ``oxidav blobs gc`` uses beside a running server (the sweeper's minimum).
LIVE_MIN_GRACE = 60.0
#: Rows handled per transaction (keeps every lock short).
GC_BATCH = 256
#: Stored keys looked up per query while adopting orphan files.
ADOPT_PAGE = 1000

_chunks: Table = BlobChunk.__table__  # type: ignore[assignment]
_manifests: Table = BlobManifest.__table__  # type: ignore[assignment]
_entries: Table = BlobManifestChunk.__table__  # type: ignore[assignment]


@dataclass
class GcReport:
    """What one gc run did."""

    orphan_files_adopted: int = 0
    manifests_removed: int = 0
    chunks_removed: int = 0
    bytes_freed: int = 0

    def __str__(self) -> str:
        return (
            f"removed {self.manifests_removed} manifest(s) and {self.chunks_removed} chunk(s), "
            f"freed {self.bytes_freed} bytes; adopted {self.orphan_files_adopted} orphan file(s)"
        )


def collect_garbage(
    db: Database,
    store: BlobStore,
    grace_seconds: float = DEFAULT_GRACE_SECONDS,
    *,
    now: datetime | None = None,
    meter: Meter | None = None,
    stop: StopFlag | None = None,
) -> GcReport:
    """Run the three steps of the module docstring; returns what was done. Raises
    ``oxidav.progress.Interrupted`` between two transactions when ``stop`` asks."""
    if grace_seconds < 0:
        raise ValueError("the grace period cannot be negative")
    now = now or utcnow()
    cutoff = now - timedelta(seconds=grace_seconds)
    meter = meter or Meter("gc", quiet=True)
    stop = stop or StopFlag()
    report = GcReport()
    report.orphan_files_adopted = _adopt_orphan_files(db, store, now, meter, stop)
    manifests, _ = _candidates(db, _manifests, cutoff)
    phase = meter.phase("manifests", manifests, unit="manifests")
    while removed := _collect_manifests(db, cutoff, now):
        report.manifests_removed += removed
        phase.advance(removed)
        stop.check()
    phase.done()
    count, size = _candidates(db, _chunks, cutoff)
    phase = meter.phase("chunks", count, size, unit="chunks")
    while True:
        stop.check()
        count, size = _collect_chunks(db, store, cutoff)
        if not count:
            break
        report.chunks_removed += count
        report.bytes_freed += size
        phase.advance(count, size)
    phase.done()
    return report


def _candidates(db: Database, table: Table, cutoff: datetime) -> tuple[int, int]:
    """How many rows of ``table`` (and their bytes) are collectable now: the progress total
    (manifests collected free more chunks, which become collectable later)."""
    with db.read() as session:
        count, size = session.execute(
            select(func.count(), func.coalesce(func.sum(table.c.size), 0)).where(
                table.c.refcount == 0, table.c.orphaned_at <= cutoff
            )
        ).one()
    return int(count), int(size)


def collect_some(
    db: Database,
    store: BlobStore,
    grace_seconds: float,
    max_batches: int,
    *,
    now: datetime | None = None,
) -> GcReport:
    """Steps 2 and 3 only, at most ``max_batches`` transactions of each (the background
    sweep: bounded work per pass; no store listing). Orphan files are left to ``gc``."""
    if grace_seconds < 0:
        raise ValueError("the grace period cannot be negative")
    now = now or utcnow()
    cutoff = now - timedelta(seconds=grace_seconds)
    report = GcReport()
    for _ in range(max_batches):
        removed = _collect_manifests(db, cutoff, now)
        report.manifests_removed += removed
        if removed < GC_BATCH:
            break
    for _ in range(max_batches):
        count, size = _collect_chunks(db, store, cutoff)
        report.chunks_removed += count
        report.bytes_freed += size
        if count < GC_BATCH:
            break
    return report


def _adopt_orphan_files(
    db: Database, store: BlobStore, now: datetime, meter: Meter, stop: StopFlag
) -> int:
    adopted = 0
    phase = meter.phase("listing", unit="blobs")
    page: list[str] = []

    def adopt(keys: list[str]) -> int:
        with db.read() as session:
            known = catalog.chunk_refcounts(session, keys)
        sizes: dict[str, int] = {}
        for key in keys:
            if key in known:
                continue
            try:
                sizes[key] = store.size(key)
            except BlobNotFoundError:
                continue
        if not sizes:
            return 0
        with db.write() as session:
            return catalog.adopt_orphan_files(session, sizes, now)

    for key in store.iter_keys():
        page.append(key)
        if len(page) >= ADOPT_PAGE:
            adopted += adopt(page)
            phase.advance(len(page))
            page = []
            stop.check()
    if page:
        adopted += adopt(page)
        phase.advance(len(page))
    phase.done()
    return adopted


def _collect_manifests(db: Database, cutoff: datetime, now: datetime) -> int:
    with db.write() as session:
        hashes = list(
            session.execute(
                select(_manifests.c.hash)
                .where(_manifests.c.refcount == 0, _manifests.c.orphaned_at <= cutoff)
                .order_by(_manifests.c.hash)
                .limit(GC_BATCH)
                .with_for_update(skip_locked=True)
            ).scalars()
        )
        if not hashes:
            return 0
        catalog.lock_chunks_in_order(session, hashes)
        entries = _entries.alias("e")
        uses = (
            select(func.count())
            .select_from(entries)
            .where(entries.c.manifest_hash.in_(hashes))
            .where(entries.c.chunk_hash == _chunks.c.hash)
            .scalar_subquery()
        )
        remaining = _chunks.c.refcount - uses
        session.execute(
            update(_chunks)
            .where(
                _chunks.c.hash.in_(
                    select(_entries.c.chunk_hash).where(_entries.c.manifest_hash.in_(hashes))
                )
            )
            .values(
                refcount=remaining,
                orphaned_at=case(
                    (remaining == 0, literal(now, UTCDateTime())),
                    else_=_chunks.c.orphaned_at,
                ),
            )
        )
        session.execute(delete(_entries).where(_entries.c.manifest_hash.in_(hashes)))
        session.execute(delete(_manifests).where(_manifests.c.hash.in_(hashes)))
        return len(hashes)


def _collect_chunks(db: Database, store: BlobStore, cutoff: datetime) -> tuple[int, int]:
    with db.write() as session:
        rows = session.execute(
            select(_chunks.c.hash, _chunks.c.size)
            .where(_chunks.c.refcount == 0, _chunks.c.orphaned_at <= cutoff)
            .order_by(_chunks.c.hash)
            .limit(GC_BATCH)
            .with_for_update(skip_locked=True)
        ).all()
        if not rows:
            return 0, 0
        keys = [row.hash for row in rows]
        session.execute(delete(_chunks).where(_chunks.c.hash.in_(keys), _chunks.c.refcount == 0))
        # The blobs go while this transaction still holds the rows: see the module docstring.
        if store.concurrency > 1:
            with ThreadPoolExecutor(store.concurrency) as pool:
                list(pool.map(store.delete, keys))
        else:
            for key in keys:
                store.delete(key)
        return len(keys), sum(row.size for row in rows)


__all__ = [
    "DEFAULT_GRACE_SECONDS",
    "LIVE_MIN_GRACE",
    "GcReport",
    "collect_garbage",
    "collect_some",
]
