"""Upload sessions and chunks as data: no HTTP, no WsgiDAV.

A chunk's bytes are ingested by the blob chain as they arrive; the chunk row then takes one
reference on the chunk's manifest (in the same transaction that records it). Assembly builds a
new manifest from the chunks' manifests in numeric chunk order (``BlobChain.concat``: no bytes
are copied); ``finish`` drops the chunk references and the rows in the caller's transaction,
the same one that writes the assembled file into the tree. Chunk names are zero-padded
numbers whose padding varies by client (8-16 digits 0-based, ``%05d`` 1-based, 6 digits on
Android), so they are ordered by numeric value, not by text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import BinaryIO

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from oxidav.blobs import BlobChain, StoredContent
from oxidav.db import Database, utcnow
from oxidav.db.models.nextcloud import UploadChunk, UploadSession

#: Sessions without activity for this long are purged (Nextcloud's upload cleanup job).
STALE_AFTER = timedelta(hours=24)
MAX_NAME = 255


class UploadError(Exception):
    """Base class; ``status`` is the HTTP status a DAV adapter answers with."""

    status = 500


class SessionExists(UploadError):
    status = 405


class SessionNotFound(UploadError):
    status = 404


class LengthMismatch(UploadError):
    status = 400


class InvalidChunkName(UploadError):
    status = 400


@dataclass(frozen=True)
class SessionInfo:
    id: int
    user_id: int
    transfer_id: str
    total_length: int | None
    destination: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class ChunkInfo:
    name: str
    size: int
    manifest_hash: str
    created_at: datetime


_SESSION_COLUMNS = (
    UploadSession.id,
    UploadSession.user_id,
    UploadSession.transfer_id,
    UploadSession.total_length,
    UploadSession.destination,
    UploadSession.created_at,
    UploadSession.updated_at,
)


def chunk_order(name: str) -> tuple[int, int, str]:
    """Sort key: numeric names by value (any padding), then any other names by text."""
    return (0, int(name), name) if name.isdigit() else (1, 0, name)


def check_name(name: str) -> str:
    if not name or len(name) > MAX_NAME or "/" in name or name in (".", "..", ".file"):
        raise InvalidChunkName(f"invalid chunk name {name[:40]!r}")
    return name


def find_session(session: Session, user_id: int, transfer_id: str) -> SessionInfo | None:
    row = session.execute(
        select(*_SESSION_COLUMNS).where(
            UploadSession.user_id == user_id, UploadSession.transfer_id == transfer_id
        )
    ).first()
    return None if row is None else SessionInfo(*row)


def list_sessions(session: Session, user_id: int) -> list[SessionInfo]:
    rows = session.execute(
        select(*_SESSION_COLUMNS)
        .where(UploadSession.user_id == user_id)
        .order_by(UploadSession.transfer_id)
    )
    return [SessionInfo(*row) for row in rows]


def list_chunks(session: Session, session_id: int) -> list[ChunkInfo]:
    """The chunks of a session in assembly order (for resume: PROPFIND Depth 1)."""
    rows = session.execute(
        select(
            UploadChunk.name, UploadChunk.size, UploadChunk.manifest_hash, UploadChunk.created_at
        ).where(UploadChunk.session_id == session_id)
    )
    chunks = [ChunkInfo(*row) for row in rows]
    chunks.sort(key=lambda chunk: chunk_order(chunk.name))
    return chunks


def pending_bytes(session: Session, user_id: int) -> int:
    """Bytes held in the chunks of every upload session of ``user_id`` (charged to his quota
    from the first chunk; the assembled file replaces them in one transaction)."""
    total = session.scalar(
        select(func.coalesce(func.sum(UploadChunk.size), 0))
        .join(UploadSession, UploadSession.id == UploadChunk.session_id)
        .where(UploadSession.user_id == user_id)
    )
    return int(total or 0)


def session_bytes(session: Session, session_id: int) -> int:
    """Bytes held in the chunks of one session."""
    total = session.scalar(
        select(func.coalesce(func.sum(UploadChunk.size), 0)).where(
            UploadChunk.session_id == session_id
        )
    )
    return int(total or 0)


def find_chunk(session: Session, session_id: int, name: str) -> ChunkInfo | None:
    row = session.execute(
        select(
            UploadChunk.name, UploadChunk.size, UploadChunk.manifest_hash, UploadChunk.created_at
        ).where(UploadChunk.session_id == session_id, UploadChunk.name == name)
    ).first()
    return None if row is None else ChunkInfo(*row)


def create_session(
    db: Database,
    user_id: int,
    transfer_id: str,
    total_length: int | None = None,
    destination: str | None = None,
) -> SessionInfo:
    """MKCOL of ``uploads/<user>/<transfer_id>``. Raises ``SessionExists``."""
    check_name(transfer_id)
    now = utcnow()
    try:
        with db.write() as session:
            if find_session(session, user_id, transfer_id) is not None:
                raise SessionExists(transfer_id)
            session.execute(
                insert(UploadSession).values(
                    user_id=user_id,
                    transfer_id=transfer_id,
                    total_length=total_length,
                    destination=destination,
                    created_at=now,
                    updated_at=now,
                )
            )
            found = find_session(session, user_id, transfer_id)
    except IntegrityError:
        raise SessionExists(transfer_id) from None
    assert found is not None
    return found


def ingest_chunk(
    chain: BlobChain, source: BinaryIO | Iterable[bytes], expected_length: int | None
) -> StoredContent:
    """Store a chunk's bytes (raises ``IncompleteContentError`` on a short or long body)."""
    return chain.ingest(source, expected_length=expected_length)


def record_chunk(
    db: Database,
    chain: BlobChain,
    session_id: int,
    name: str,
    content: StoredContent,
    check_room: Callable[[Session, int], None] | None = None,
) -> bool:
    """Make ``content`` chunk ``name`` of the session (replacing an earlier upload of it).

    ``check_room(session, growth)`` runs first in the same transaction, with the bytes the
    chunk adds (a replaced chunk's size deducted); it raises (the quota: ``QuotaExceeded``) to
    record nothing: the ingested bytes are then unreferenced, left to the blob collector.
    Returns True if the chunk is new. Raises ``SessionNotFound`` if the session is gone.
    """
    check_name(name)
    now = utcnow()
    with db.write() as session:
        if check_room is not None:  # first: it takes the user's tree lock, as file writes do
            replaced = session.scalar(
                select(UploadChunk.size).where(
                    UploadChunk.session_id == session_id, UploadChunk.name == name
                )
            )
            check_room(session, content.size - (replaced or 0))
        touched = session.execute(
            update(UploadSession).where(UploadSession.id == session_id).values(updated_at=now)
        )
        if not touched.rowcount:  # type: ignore[attr-defined]
            raise SessionNotFound(str(session_id))
        old = session.scalar(
            select(UploadChunk.manifest_hash).where(
                UploadChunk.session_id == session_id, UploadChunk.name == name
            )
        )
        chain.incref(session, content.manifest_hash)
        if old is not None:
            chain.decref(session, old)
            session.execute(
                update(UploadChunk)
                .where(UploadChunk.session_id == session_id, UploadChunk.name == name)
                .values(manifest_hash=content.manifest_hash, size=content.size, created_at=now)
            )
        else:
            session.execute(
                insert(UploadChunk).values(
                    session_id=session_id,
                    name=name,
                    manifest_hash=content.manifest_hash,
                    size=content.size,
                    created_at=now,
                )
            )
    return old is None


def _drop_chunks(
    session: Session, chain: BlobChain, session_id: int, names: Sequence[str] | None
) -> int:
    stmt = select(UploadChunk.manifest_hash).where(UploadChunk.session_id == session_id)
    if names is not None:
        stmt = stmt.where(UploadChunk.name.in_(names))
    hashes = list(session.scalars(stmt))
    for manifest_hash in hashes:
        chain.decref(session, manifest_hash)
    cond = UploadChunk.session_id == session_id
    if names is not None:
        cond = cond & UploadChunk.name.in_(names)
    session.execute(delete(UploadChunk).where(cond))
    return len(hashes)


def delete_chunk(db: Database, chain: BlobChain, session_id: int, name: str) -> bool:
    """DELETE of one chunk (the client drops chunks after a gap on resume)."""
    with db.write() as session:
        return _drop_chunks(session, chain, session_id, [name]) > 0


def finish(session: Session, chain: BlobChain, session_id: int) -> None:
    """Drop a session with its chunks and their references, in the caller's transaction."""
    _drop_chunks(session, chain, session_id, None)
    session.execute(delete(UploadSession).where(UploadSession.id == session_id))


def abort(db: Database, chain: BlobChain, session_id: int) -> None:
    """DELETE of the session folder."""
    with db.write() as session:
        finish(session, chain, session_id)


def release_user_uploads(session: Session, chain: BlobChain, user_id: int) -> int:
    """Drop every upload session of ``user_id`` with its chunk references, in the caller's
    transaction (removing the user: the ``users`` cascade would skip the decrefs). The session
    rows are locked first, so a chunk being recorded meanwhile either is seen here or finds its
    session gone. Returns how many sessions went."""
    ids = list(
        session.scalars(
            select(UploadSession.id)
            .where(UploadSession.user_id == user_id)
            .order_by(UploadSession.id)
            .with_for_update()
        )
    )
    for session_id in ids:
        finish(session, chain, session_id)
    return len(ids)


def assemble(
    db: Database, chain: BlobChain, session_id: int, total_length: int | None
) -> StoredContent | None:
    """The whole file: the chunks' manifests concatenated in chunk order (no bytes copied).

    None for an upload without chunks (the empty file). Raises ``LengthMismatch`` when
    ``total_length`` (``OC-Total-Length``) differs from the sum of the chunk sizes.
    """
    with db.read() as session:
        chunks = list_chunks(session, session_id)
    size = sum(chunk.size for chunk in chunks)
    if total_length is not None and size != total_length:
        raise LengthMismatch(f"chunks hold {size} bytes, OC-Total-Length says {total_length}")
    parts = [chunk.manifest_hash for chunk in chunks if chunk.size > 0]
    if not parts:
        return None
    return chain.concat(parts)


def purge_stale(
    db: Database,
    chain: BlobChain,
    now: datetime | None = None,
    older_than: timedelta = STALE_AFTER,
    limit: int | None = None,
) -> int:
    """Drop every session idle for ``older_than`` (default ``STALE_AFTER``) with its chunk
    references, at most ``limit`` of them (oldest first); one transaction each. Returns how
    many."""
    cutoff = (now or utcnow()) - older_than
    with db.read() as session:
        ids = list(
            session.scalars(
                select(UploadSession.id)
                .where(UploadSession.updated_at < cutoff)
                .order_by(UploadSession.updated_at, UploadSession.id)
                .limit(limit)
            )
        )
    for session_id in ids:
        with db.write() as session:
            finish(session, chain, session_id)
    return len(ids)
