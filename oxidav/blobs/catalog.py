"""The database side of the blob chain: chunk and manifest rows, their refcounts and lookups.

Every function takes the caller's ``Session`` and runs inside the caller's transaction; the
statements are batched (one ``IN`` list per batch of chunks, one ``INSERT … SELECT`` per manifest
copy), and the few dialect differences (``ON CONFLICT``) are hidden in ``oxidav.db.upsert``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Connection,
    Table,
    bindparam,
    case,
    func,
    literal,
    or_,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from oxidav.blobs.chunk_rows import add_inline_chunk, change_content_refs, content_chunk
from oxidav.blobs.manifests import ManifestBuilder, ManifestEntry
from oxidav.db import Database, Transaction, UTCDateTime, core, utcnow
from oxidav.db.models.blobs import BlobChunk, BlobManifest, BlobManifestChunk
from oxidav.db.prepared import Prepared
from oxidav.db.upsert import upsert

#: Largest ``IN (…)`` list sent in one statement.
IN_LIST_MAX = 500
#: Rows per ``INSERT`` of manifest entries.
INSERT_BATCH = 2000

_chunks: Table = BlobChunk.__table__  # type: ignore[assignment]
_manifests: Table = BlobManifest.__table__  # type: ignore[assignment]
_entries: Table = BlobManifestChunk.__table__  # type: ignore[assignment]


class ManifestNotFoundError(KeyError):
    """No manifest of that hash exists (never created, or collected by gc)."""

    def __init__(self, manifest_hash: str) -> None:
        super().__init__(manifest_hash)
        self.manifest_hash = manifest_hash

    def __str__(self) -> str:
        return f"manifest {self.manifest_hash} not found"


class RefcountError(ValueError):
    """A decref would take a manifest's refcount below zero."""


class BlobChainConflictError(RuntimeError):
    """A chunk this ingest relied on was collected before the ingest committed (the ingest ran
    longer than the gc grace period). Nothing was made visible; the ingest can be repeated."""


def _batches(items: Sequence[str], size: int = IN_LIST_MAX) -> Iterator[Sequence[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


# -- chunks ------------------------------------------------------------------------------


def chunk_refcounts(session: Session, keys: Sequence[str]) -> dict[str, int]:
    """``{hash: refcount}`` of the chunks among ``keys`` that have a row: one query per
    ``IN_LIST_MAX`` keys."""
    found: dict[str, int] = {}
    for part in _batches(keys):
        rows = session.execute(
            select(_chunks.c.hash, _chunks.c.refcount).where(_chunks.c.hash.in_(part))
        )
        found.update({row.hash: row.refcount for row in rows})
    return found


@functools.cache
def _claim(dialect_name: str) -> Any:
    stmt = upsert(dialect_name, _chunks)
    return stmt.on_conflict_do_update(
        index_elements=[_chunks.c.hash],
        set_={"orphaned_at": stmt.excluded.orphaned_at},
        where=_chunks.c.refcount == 0,
    )


# The statements of the ingest hot path, built once (``oxidav.db.core``): building a statement
# costs more than running it on a small batch.
_REFCOUNTS = select(_chunks.c.hash, _chunks.c.refcount).where(
    _chunks.c.hash.in_(bindparam("keys", expanding=True))
)
_REFCOUNT_ONE = select(_chunks.c.hash, _chunks.c.refcount).where(_chunks.c.hash == bindparam("key"))


@functools.cache
def _claim_one(dialect_name: str) -> Prepared:
    """One chunk: the upsert alone answers (it returns the row only if it inserted or renewed
    it)."""
    return Prepared(_claim(dialect_name).returning(_chunks.c.hash))


def claim_chunks(session: Session | Connection, sizes: dict[str, int], now: datetime) -> set[str]:
    """Of the chunks ``sizes`` (hash -> size) an ingest is about to need, return those it must
    write, having recorded the intent to write them: every chunk without a row or with an
    unreferenced one (refcount 0 is never trusted: it may be garbage whose bytes gc is deleting,
    or an intent of an ingest that failed before writing). Referenced chunks are left alone and
    not returned. One ``SELECT`` per ``IN_LIST_MAX`` keys, then one upsert (``executemany``) of
    the others, in hash order (one lock order for every writer).

    The intent is a new row with refcount 0, or, for an unreferenced row, a fresh
    ``orphaned_at``, so that gc leaves it alone for a grace period. On PostgreSQL the upsert
    waits for a gc transaction deleting the same row; on SQLite the write lock serializes them;
    either way the bytes are written after any gc that claimed the chunk has deleted them. On
    PostgreSQL a row may gain a reference between the two statements (another ingest's manifest
    commits): it is left as it is and still returned, and writing it again is harmless (a key
    names its bytes; a write replaces a blob atomically). A single chunk (a small content)
    costs the upsert alone: it returns the row only where it inserted or renewed one."""
    if not sizes:
        return set()
    conn = core(session)
    if len(sizes) == 1:
        ((key, size),) = sizes.items()
        row = {"hash": key, "size": size, "refcount": 0, "created_at": now, "orphaned_at": now}
        return {key} if _claim_one(conn.dialect.name).run(conn, row).rows else set()
    keys = list(sizes)
    referenced: set[str] = set()
    for part in _batches(keys):
        if len(part) == 1:
            rows = conn.execute(_REFCOUNT_ONE, {"key": part[0]})
        else:
            rows = conn.execute(_REFCOUNTS, {"keys": part})
        referenced.update(row[0] for row in rows if row[1] > 0)
    wanted = sorted(key for key in keys if key not in referenced)
    if wanted:
        conn.execute(
            _claim(conn.dialect.name),
            [
                {"hash": k, "size": sizes[k], "refcount": 0, "created_at": now, "orphaned_at": now}
                for k in wanted
            ],
        )
    return set(wanted)


def adopt_orphan_files(session: Session, sizes: dict[str, int], now: datetime) -> int:
    """Give stored blobs that have no row (left by a crash) an unreferenced row, so that gc
    collects them after the grace period like any other orphan. Returns the rows created."""
    if not sizes:
        return 0
    stmt = (
        upsert(session.get_bind().dialect.name, _chunks)
        .on_conflict_do_nothing(index_elements=[_chunks.c.hash])
        .returning(_chunks.c.hash)
    )
    created = 0
    for key, size in sizes.items():
        row = session.execute(
            stmt.values(hash=key, size=size, refcount=0, created_at=now, orphaned_at=now)
        ).first()
        created += row is not None
    return created


# -- manifests ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ManifestInfo:
    """A manifest row, detached from any session; or, ``by_chunk``, a content named by its
    one chunk (``chunk_rows.add_content_chunk``), which has no manifest row."""

    hash: str
    size: int
    content_hash: str
    chunk_count: int
    refcount: int
    by_chunk: bool = False


def get_manifest(session: Session, manifest_hash: str) -> ManifestInfo | None:
    """The manifest named ``manifest_hash``, or the content named by that chunk."""
    row = session.execute(
        select(
            _manifests.c.hash,
            _manifests.c.size,
            _manifests.c.content_hash,
            _manifests.c.chunk_count,
            _manifests.c.refcount,
        ).where(_manifests.c.hash == manifest_hash)
    ).first()
    if row is not None:
        return ManifestInfo(*row)
    chunk = content_chunk(core(session), manifest_hash)
    if chunk is None:
        return None
    size, references = chunk
    return ManifestInfo(manifest_hash, size, manifest_hash, 1, references, by_chunk=True)


def require_manifest(session: Session, manifest_hash: str) -> ManifestInfo:
    manifest = get_manifest(session, manifest_hash)
    if manifest is None:
        raise ManifestNotFoundError(manifest_hash)
    return manifest


_LOCK_CHUNKS = (
    select(_chunks.c.hash)
    .where(_chunks.c.hash.in_(bindparam("keys", expanding=True)))
    .order_by(_chunks.c.hash)
    .with_for_update()
)


def lock_chunks(session: Session, keys: Sequence[str]) -> None:
    """On PostgreSQL, lock the chunk rows ``keys`` in hash order (see ``lock_chunks_in_order``)."""
    _lock_chunks(core(session), keys)


def _lock_chunks(conn: Connection, keys: Sequence[str]) -> None:
    if conn.dialect.name != "postgresql":
        return
    for part in _batches(sorted(keys)):
        conn.execute(_LOCK_CHUNKS, {"keys": part}).all()


def lock_chunks_in_order(session: Session, manifest_hashes: Sequence[str]) -> None:
    """On PostgreSQL, lock the chunk rows of ``manifest_hashes`` in hash order, so that two
    transactions changing overlapping chunk sets cannot deadlock (SQLite has one writer).
    This MUST come before any statement that locks chunk rows in another order — inserting
    manifest entries does, through their foreign key. A content named by its chunk locks that
    chunk's row (no manifest hash is the hash of a chunk: ``oxidav.blobs.inline``)."""
    if session.get_bind().dialect.name != "postgresql":
        return
    session.execute(
        select(_chunks.c.hash)
        .where(
            or_(
                _chunks.c.hash.in_(
                    select(_entries.c.chunk_hash).where(
                        _entries.c.manifest_hash.in_(manifest_hashes)
                    )
                ),
                _chunks.c.hash.in_(manifest_hashes),
            )
        )
        .order_by(_chunks.c.hash)
        .with_for_update()
    ).all()


def _add_chunk_references(session: Session, manifest_hash: str, distinct: int) -> None:
    """Count the new manifest's entries into its chunks' refcounts, in one statement. The
    caller has locked the chunk rows in order already."""
    entries = _entries.alias("e")
    uses = (
        select(func.count())
        .select_from(entries)
        .where(entries.c.manifest_hash == manifest_hash)
        .where(entries.c.chunk_hash == _chunks.c.hash)
        .scalar_subquery()
    )
    result = session.execute(
        update(_chunks)
        .where(
            _chunks.c.hash.in_(
                select(_entries.c.chunk_hash).where(_entries.c.manifest_hash == manifest_hash)
            )
        )
        .values(refcount=_chunks.c.refcount + uses, orphaned_at=None)
    )
    if result.rowcount != distinct:  # type: ignore[attr-defined]
        raise BlobChainConflictError(f"chunks of manifest {manifest_hash} vanished during ingest")


@functools.cache
def _insert_manifest(dialect_name: str) -> Prepared:
    return Prepared(
        upsert(dialect_name, _manifests)
        .on_conflict_do_nothing(index_elements=[_manifests.c.hash])
        .returning(_manifests.c.hash)
    )


_TOUCH_MANIFEST = (
    update(_manifests)
    .where(_manifests.c.hash == bindparam("manifest_hash"))
    .values(
        orphaned_at=case(
            (_manifests.c.refcount == 0, bindparam("now", type_=UTCDateTime())),
            else_=_manifests.c.orphaned_at,
        )
    )
)
#: An existing manifest gains ``n`` references (``create_manifest(references=n)``, ``incref``).
_INCREF_MANIFEST = (
    update(_manifests)
    .where(_manifests.c.hash == bindparam("manifest_hash"))
    .values(refcount=_manifests.c.refcount + bindparam("n", type_=BigInteger()), orphaned_at=None)
)
_DECREF_REMAINING = _manifests.c.refcount - bindparam("n", type_=BigInteger())
#: ``n`` references dropped; ``orphaned_at`` is stamped only when this reaches zero.
_DECREF_MANIFEST = (
    update(_manifests)
    .where(
        _manifests.c.hash == bindparam("manifest_hash"),
        _manifests.c.refcount >= bindparam("n", type_=BigInteger()),
    )
    .values(
        refcount=_DECREF_REMAINING,
        orphaned_at=case(
            (_DECREF_REMAINING == 0, bindparam("now", type_=UTCDateTime())),
            else_=_manifests.c.orphaned_at,
        ),
    )
)
_MANIFEST_REFCOUNT = select(_manifests.c.refcount).where(
    _manifests.c.hash == bindparam("manifest_hash")
)
_INSERT_ENTRIES = _entries.insert()
_INSERT_ENTRY = Prepared(_INSERT_ENTRIES)
_ADD_USES = (
    update(_chunks)
    .where(_chunks.c.hash.in_(bindparam("keys", expanding=True)))
    .values(refcount=_chunks.c.refcount + bindparam("uses", type_=BigInteger()), orphaned_at=None)
)
# One chunk (a small content): no expanding IN list to render.
_ADD_USES_ONE = Prepared(
    update(_chunks)
    .where(_chunks.c.hash == bindparam("key"))
    .values(refcount=_chunks.c.refcount + bindparam("uses", type_=BigInteger()), orphaned_at=None)
)


def _insert_or_touch_manifest(
    conn: Connection, values: dict[str, Any], now: datetime, references: int = 0
) -> bool:
    """Insert a manifest row with ``references`` references; if it exists, add them to it
    instead (``references`` 0: renew the grace period of an unreferenced one). Returns
    whether the row was created. A row that vanishes between the two statements (a
    concurrent gc collected it) is inserted afresh."""
    row = {
        **values,
        "refcount": references,
        "created_at": now,
        "orphaned_at": None if references else now,
    }
    while True:
        if _insert_manifest(conn.dialect.name).run(conn, row).rows:
            return True
        if references:
            touched = conn.execute(
                _INCREF_MANIFEST, {"manifest_hash": values["hash"], "n": references}
            )
        else:
            touched = conn.execute(_TOUCH_MANIFEST, {"manifest_hash": values["hash"], "now": now})
        if touched.rowcount:
            return False


def _add_uses(conn: Connection, manifest_hash: str, uses: dict[str, int]) -> None:
    """Add ``uses[hash]`` to each chunk's refcount (one UPDATE per distinct use count and
    ``IN_LIST_MAX`` keys; a manifest's chunks are nearly always used once each). The caller
    has locked the rows in order already."""
    if len(uses) == 1:
        ((key, count),) = uses.items()
        if _ADD_USES_ONE.run(conn, {"key": key, "uses": count}).rowcount != 1:
            raise BlobChainConflictError(f"chunk {key} of {manifest_hash} vanished during ingest")
        return
    by_count: dict[int, list[str]] = {}
    for key, count in uses.items():
        by_count.setdefault(count, []).append(key)
    changed = 0
    for count, keys in by_count.items():
        for part in _batches(sorted(keys)):
            changed += conn.execute(_ADD_USES, {"keys": part, "uses": count}).rowcount
    if changed != len(uses):
        raise BlobChainConflictError(f"chunks of manifest {manifest_hash} vanished during ingest")


def _entry_row(manifest_hash: str, entry: ManifestEntry) -> dict[str, Any]:
    return {
        "manifest_hash": manifest_hash,
        "start": entry.start,
        "size": entry.size,
        "chunk_hash": entry.chunk_hash,
    }


def create_manifest(
    session: Transaction,
    builder: ManifestBuilder,
    content_hash: str,
    now: datetime,
    references: int = 0,
    inline: bytes | None = None,
) -> bool:
    """Insert the manifest of ``builder`` with ``references`` references (0: an orphan that gc
    collects after the grace period unless someone takes one) and its entries, and count them
    into the chunk refcounts. If it already exists, only add ``references`` to it (or, for 0,
    renew its grace period). Returns whether it was created. Raises
    ``BlobChainConflictError`` if a chunk row is missing.

    ``inline``: the bytes of the manifest's one chunk, kept in the chunk's row
    (``oxidav.blobs.inline``), which this transaction creates or updates."""
    if inline is not None and builder.count != 1:
        raise ValueError("only the one chunk of a one-chunk content is kept in its row")
    conn = core(session)
    created = _insert_or_touch_manifest(
        conn,
        {
            "hash": builder.hash,
            "size": builder.size,
            "content_hash": content_hash,
            "chunk_count": builder.count,
        },
        now,
        references,
    )
    if not created:
        return False
    if inline is not None:
        entry = next(builder.entries())
        row = {
            "hash": entry.chunk_hash,
            "size": entry.size,
            "refcount": 1,
            "created_at": now,
            "orphaned_at": None,
            "data": inline,
        }
        add_inline_chunk(conn, row)
        _INSERT_ENTRY.run(conn, _entry_row(builder.hash, entry))
        return True
    uses = builder.chunk_uses()
    _lock_chunks(conn, list(uses))
    batch: list[dict[str, Any]] = []
    try:
        for entry in builder.entries():
            batch.append(_entry_row(builder.hash, entry))
            if len(batch) >= INSERT_BATCH:
                conn.execute(_INSERT_ENTRIES, batch)
                batch = []
        if len(batch) == 1:
            _INSERT_ENTRY.run(conn, batch[0])
        elif batch:
            conn.execute(_INSERT_ENTRIES, batch)
    except IntegrityError as exc:
        raise BlobChainConflictError(
            f"a chunk of manifest {builder.hash} vanished during ingest"
        ) from exc
    if uses:
        _add_uses(conn, builder.hash, uses)
    return True


def create_concatenation(
    session: Session,
    manifest_hash: str,
    parts: Sequence[ManifestInfo],
    content_hash: str,
    now: datetime,
) -> bool:
    """Insert manifest ``manifest_hash`` whose entries are those of ``parts`` in order, copied
    row-wise in the database (no chunk bytes move). Returns whether it was created."""
    size = sum(part.size for part in parts)
    count = sum(part.chunk_count for part in parts)
    created = _insert_or_touch_manifest(
        core(session),
        {"hash": manifest_hash, "size": size, "content_hash": content_hash, "chunk_count": count},
        now,
    )
    if not created:
        return False
    lock_chunks_in_order(session, [part.hash for part in parts])
    base = 0
    for part in parts:
        if part.by_chunk:
            _INSERT_ENTRY.run(
                core(session),
                _entry_row(manifest_hash, ManifestEntry(base, part.size, part.hash)),
            )
            base += part.size
            continue
        source = select(
            literal(manifest_hash).label("manifest_hash"),
            (_entries.c.start + base).label("start"),
            _entries.c.size,
            _entries.c.chunk_hash,
        ).where(_entries.c.manifest_hash == part.hash)
        session.execute(
            _entries.insert().from_select(["manifest_hash", "start", "size", "chunk_hash"], source)
        )
        base += part.size
    if count:
        distinct = session.execute(
            select(func.count(func.distinct(_entries.c.chunk_hash))).where(
                _entries.c.manifest_hash == manifest_hash
            )
        ).scalar_one()
        _add_chunk_references(session, manifest_hash, distinct)
    return True


def change_manifest_refcount(session: Transaction, manifest_hash: str, delta: int) -> None:
    """Add ``delta`` to a manifest's refcount — or, for a content named by its chunk, to that
    chunk's ``content_refs`` and ``refcount``; at zero the manifest (or chunk) becomes an
    orphan that gc collects after the grace period. Raises ``ManifestNotFoundError`` or, for
    a count that would go negative, ``RefcountError``."""
    if delta == 0:
        return
    conn = core(session)
    if delta > 0:
        result = conn.execute(_INCREF_MANIFEST, {"manifest_hash": manifest_hash, "n": delta})
    else:
        params = {"manifest_hash": manifest_hash, "n": -delta, "now": utcnow()}
        result = conn.execute(_DECREF_MANIFEST, params)
    if result.rowcount == 1 or change_content_refs(conn, manifest_hash, delta, utcnow()):
        return
    current = conn.execute(_MANIFEST_REFCOUNT, {"manifest_hash": manifest_hash}).scalar()
    if current is None:
        chunk = content_chunk(conn, manifest_hash)
        # A content named by a chunk whose bytes may be gone (unreferenced, not in its row)
        # is garbage: it cannot gain a reference again.
        current = None if chunk is None or delta > 0 else chunk[1]
    if current is None:
        raise ManifestNotFoundError(manifest_hash)
    raise RefcountError(f"manifest {manifest_hash} has refcount {current}, cannot remove {-delta}")


def entries_from(
    session: Session, manifest_hash: str, position: int, limit: int
) -> list[ManifestEntry]:
    """Up to ``limit`` entries of a manifest, starting with the one that holds byte
    ``position``: one indexed query."""
    first = (
        select(func.max(_entries.c.start))
        .where(_entries.c.manifest_hash == manifest_hash, _entries.c.start <= position)
        .scalar_subquery()
    )
    rows = session.execute(
        select(_entries.c.start, _entries.c.size, _entries.c.chunk_hash)
        .where(_entries.c.manifest_hash == manifest_hash, _entries.c.start >= first)
        .order_by(_entries.c.start)
        .limit(limit)
    ).all()
    if rows or limit <= 0:
        return [ManifestEntry(row.start, row.size, row.chunk_hash) for row in rows]
    chunk = content_chunk(core(session), manifest_hash)
    if chunk is None or position >= chunk[0]:
        return []
    return [ManifestEntry(0, chunk[0], manifest_hash)]


def iter_entries(db: Database, manifest_hash: str, page: int = 1000) -> Iterator[ManifestEntry]:
    """Every entry of a manifest in order, a page per short read transaction."""
    position = 0
    while True:
        with db.read() as session:
            page_rows = entries_from(session, manifest_hash, position, page)
        if not page_rows:
            return
        yield from page_rows
        last = page_rows[-1]
        position = last.start + last.size
        if len(page_rows) < page:
            return


__all__ = [
    "BlobChainConflictError",
    "ManifestInfo",
    "ManifestNotFoundError",
    "RefcountError",
    "adopt_orphan_files",
    "change_manifest_refcount",
    "chunk_refcounts",
    "claim_chunks",
    "create_concatenation",
    "create_manifest",
    "entries_from",
    "get_manifest",
    "iter_entries",
    "require_manifest",
]
