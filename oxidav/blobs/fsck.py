"""Consistency check of the blob chain: database rows against the bytes in the store.

Reported, never repaired:

* **missing** — a referenced chunk (refcount > 0) whose blob is not in the store;
* **orphaned** — a stored blob with no chunk row (gc adopts and removes these);
* **corrupt** (``deep`` only) — a blob whose bytes, read back whole, do not hash to its name
  (or cannot be decrypted);
* **refcount mismatches** — a chunk whose refcount differs from the number of manifest entries
  naming it plus its references as a content (``content_refs``, ``oxidav.blobs.inline``);
* **manifest mismatches** — a manifest whose size or chunk count differs from its entries;
* **affected manifests** — the manifests that name a missing or corrupt chunk, and the
  contents named by such a chunk.

Unreferenced chunk rows (refcount 0) are not checked for presence: they may be intents of a
running ingest, and an ingest never trusts them. A chunk kept in its row
(``oxidav.blobs.inline``) has no blob to find: ``deep`` checks the bytes of the row instead.

It only reads, so it may run beside a server. What a concurrent write or gc could make look
wrong for an instant — a chunk referenced just after its presence was probed, a blob listed
just before gc removed it with its row — is looked at again at the end, and only what is still
wrong is reported. ``stop`` is looked at between pages (``oxidav.progress.Interrupted``).
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import blake3
from sqlalchemy import Table, func, null, or_, select

from oxidav.blobs import catalog
from oxidav.blobs.store import BlobNotFoundError, BlobStore, BlobStoreError, check_chunk
from oxidav.db import Database
from oxidav.db.models.blobs import BlobChunk, BlobManifest, BlobManifestChunk
from oxidav.progress import Meter, StopFlag

PAGE = 1000

_chunks: Table = BlobChunk.__table__  # type: ignore[assignment]
_manifests: Table = BlobManifest.__table__  # type: ignore[assignment]
_entries: Table = BlobManifestChunk.__table__  # type: ignore[assignment]


@dataclass
class FsckReport:
    chunks_checked: int = 0
    blobs_listed: int = 0
    missing: list[str] = field(default_factory=list)
    orphaned: list[str] = field(default_factory=list)
    corrupt: list[str] = field(default_factory=list)
    refcount_mismatches: list[tuple[str, int, int]] = field(default_factory=list)
    manifest_mismatches: list[str] = field(default_factory=list)
    affected_manifests: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (
            self.missing
            or self.orphaned
            or self.corrupt
            or self.refcount_mismatches
            or self.manifest_mismatches
        )

    def lines(self) -> Iterator[str]:
        yield f"checked {self.chunks_checked} chunk(s), listed {self.blobs_listed} blob(s)"
        for key in self.missing:
            yield f"missing chunk {key}"
        for key in self.corrupt:
            yield f"corrupt chunk {key}"
        for key in self.orphaned:
            yield f"orphaned blob {key} (no chunk row; gc removes it)"
        for key, stored, counted in self.refcount_mismatches:
            yield f"chunk {key} has refcount {stored} but {counted} uses (entries and content)"
        for key in self.manifest_mismatches:
            yield f"manifest {key} does not match its entries"
        for key in self.affected_manifests:
            yield f"affected manifest {key}"
        yield "clean" if self.clean else "PROBLEMS FOUND"


@dataclass(frozen=True)
class _Referenced:
    key: str
    size: int
    inline: bool  # its bytes are kept in its row
    data: bytes | None  # those bytes, when ``deep``


def _referenced_chunk_pages(db: Database, deep: bool) -> Iterator[list[_Referenced]]:
    after = ""
    while True:
        with db.read() as session:
            rows = [
                _Referenced(*row)
                for row in session.execute(
                    select(
                        _chunks.c.hash,
                        _chunks.c.size,
                        _chunks.c.data.is_not(None),
                        _chunks.c.data if deep else null(),
                    )
                    .where(_chunks.c.refcount > 0, _chunks.c.hash > after)
                    .order_by(_chunks.c.hash)
                    .limit(PAGE)
                )
            ]
        if not rows:
            return
        yield rows
        after = rows[-1].key


def _probe(store: BlobStore, chunk: _Referenced, deep: bool) -> str | None:
    """``"missing"``, ``"corrupt"`` or ``None`` for one chunk."""
    key = chunk.key
    if chunk.inline:
        if deep:
            try:
                check_chunk(key, chunk.size, bytes(chunk.data or b""))
            except BlobStoreError:
                return "corrupt"
        return None
    try:
        if not deep:
            return None if store.exists(key) else "missing"
        data = store.get(key)
    except BlobNotFoundError:
        return "missing"
    except BlobStoreError:
        return "corrupt"  # e.g. fails authentication under the configured keys
    return None if blake3.blake3(data).hexdigest() == key else "corrupt"


def _referenced_totals(db: Database) -> tuple[int, int]:
    with db.read() as session:
        count, size = session.execute(
            select(func.count(), func.coalesce(func.sum(_chunks.c.size), 0)).where(
                _chunks.c.refcount > 0
            )
        ).one()
    return int(count), int(size)


def check(
    db: Database,
    store: BlobStore,
    deep: bool = False,
    *,
    meter: Meter | None = None,
    stop: StopFlag | None = None,
) -> FsckReport:
    """Check everything listed in the module docstring."""
    meter = meter or Meter("fsck", quiet=True)
    stop = stop or StopFlag()
    report = FsckReport()
    stop.check()
    count, size = _referenced_totals(db)
    phase = meter.phase("chunks", count, size if deep else None, unit="chunks")
    with ThreadPoolExecutor(max(1, store.concurrency)) as pool:
        for chunks in _referenced_chunk_pages(db, deep):
            stop.check()
            for chunk, verdict in zip(
                chunks, pool.map(lambda c: _probe(store, c, deep), chunks), strict=True
            ):
                if verdict == "missing":
                    report.missing.append(chunk.key)
                elif verdict == "corrupt":
                    report.corrupt.append(chunk.key)
            report.chunks_checked += len(chunks)
            phase.advance(len(chunks), sum(c.size for c in chunks) if deep else 0)
    phase.done()
    _check_orphans(db, store, report, meter, stop)
    _recheck(db, store, report)
    _check_counts(db, report)
    bad = report.missing + report.corrupt
    for start in range(0, len(bad), catalog.IN_LIST_MAX):
        part = bad[start : start + catalog.IN_LIST_MAX]
        with db.read() as session:
            report.affected_manifests.extend(
                session.execute(
                    select(_entries.c.manifest_hash)
                    .distinct()
                    .where(_entries.c.chunk_hash.in_(part))
                ).scalars()
            )
            report.affected_manifests.extend(
                session.execute(
                    select(_chunks.c.hash).where(
                        _chunks.c.hash.in_(part), _chunks.c.content_refs.is_not(None)
                    )
                ).scalars()
            )
    return report


def _recheck(db: Database, store: BlobStore, report: FsckReport) -> None:
    """Keep only the missing chunks still referenced and still absent, and the orphans still
    stored and still without a row (see the module docstring)."""
    missing: list[str] = []
    for start in range(0, len(report.missing), catalog.IN_LIST_MAX):
        part = report.missing[start : start + catalog.IN_LIST_MAX]
        with db.read() as session:
            referenced = set(
                session.execute(
                    select(_chunks.c.hash).where(
                        _chunks.c.hash.in_(part), _chunks.c.refcount > 0, _chunks.c.data.is_(None)
                    )
                ).scalars()
            )
        missing.extend(k for k in part if k in referenced and not store.exists(k))
    report.missing = missing
    orphaned: list[str] = []
    for start in range(0, len(report.orphaned), catalog.IN_LIST_MAX):
        part = report.orphaned[start : start + catalog.IN_LIST_MAX]
        with db.read() as session:
            known = catalog.chunk_refcounts(session, part)
        orphaned.extend(k for k in part if k not in known and store.exists(k))
    report.orphaned = orphaned


def _check_orphans(
    db: Database, store: BlobStore, report: FsckReport, meter: Meter, stop: StopFlag
) -> None:
    page: list[str] = []
    phase = meter.phase("listing", unit="blobs")

    def flush() -> None:
        with db.read() as session:
            known = catalog.chunk_refcounts(session, page)
        report.orphaned.extend(key for key in page if key not in known)
        page.clear()

    for key in store.iter_keys():
        report.blobs_listed += 1
        page.append(key)
        if len(page) >= PAGE:
            phase.advance(len(page))
            flush()
            stop.check()
    if page:
        phase.advance(len(page))
        flush()
    phase.done()


def _check_counts(db: Database, report: FsckReport) -> None:
    with db.read() as session:
        counted = func.count(_entries.c.chunk_hash) + func.coalesce(_chunks.c.content_refs, 0)
        report.refcount_mismatches.extend(
            (row.hash, row.refcount, row.counted)
            for row in session.execute(
                select(_chunks.c.hash, _chunks.c.refcount, counted.label("counted"))
                .select_from(_chunks.outerjoin(_entries, _entries.c.chunk_hash == _chunks.c.hash))
                .group_by(_chunks.c.hash, _chunks.c.refcount, _chunks.c.content_refs)
                .having(_chunks.c.refcount != counted)
            )
        )
        total = func.coalesce(func.sum(_entries.c.size), 0)
        entries = func.count(_entries.c.start)
        report.manifest_mismatches.extend(
            session.execute(
                select(_manifests.c.hash)
                .select_from(
                    _manifests.outerjoin(_entries, _entries.c.manifest_hash == _manifests.c.hash)
                )
                .group_by(_manifests.c.hash, _manifests.c.size, _manifests.c.chunk_count)
                .having(or_(_manifests.c.size != total, _manifests.c.chunk_count != entries))
            ).scalars()
        )


__all__ = ["FsckReport", "check"]
