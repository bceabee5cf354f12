"""Which chunks a user holds, as the push protocol may tell them: those of contents in their
own tree (live or in the trash) and those they staged through ``chunks`` within the blob gc
grace period.

Invariant: nothing here looks at another user's content, so a ``need`` answer and a commit's
acceptance of a chunk reveal nothing about what anybody else stores.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from oxidav.db import Database, core, utcnow
from oxidav.db.models.blobs import BlobManifestChunk
from oxidav.db.models.nextcloud import PushStagedChunk
from oxidav.db.models.tree import Node
from oxidav.db.upsert import upsert

_BATCH = 500


def _batches(items: Sequence[str]) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), _BATCH):
        yield items[start : start + _BATCH]


def held(session: Session, user_id: int, keys: Sequence[str], staged_after: datetime) -> set[str]:
    """The chunks among ``keys`` that ``user_id`` holds (see the module docstring)."""
    found: set[str] = set()
    for part in _batches(keys):
        in_manifests = (
            select(BlobManifestChunk.chunk_hash)
            .join(Node, Node.manifest_hash == BlobManifestChunk.manifest_hash)
            .where(Node.user_id == user_id, BlobManifestChunk.chunk_hash.in_(part))
        )
        named_by_chunk = select(Node.manifest_hash).where(
            Node.user_id == user_id, Node.manifest_hash.in_(part)
        )
        staged = select(PushStagedChunk.chunk_hash).where(
            PushStagedChunk.user_id == user_id,
            PushStagedChunk.chunk_hash.in_(part),
            PushStagedChunk.staged_at > staged_after,
        )
        for statement in (staged, in_manifests, named_by_chunk):
            found.update(row[0] for row in session.execute(statement) if row[0] is not None)
            if len(found) >= len(part):
                break
    return found


def record_staged(db: Database, user_id: int, keys: Iterable[str]) -> None:
    """Remember that ``user_id`` staged ``keys`` now (an existing row is renewed)."""
    rows = [{"user_id": user_id, "chunk_hash": key, "staged_at": utcnow()} for key in keys]
    if not rows:
        return
    with db.write_core() as connection:
        statement = upsert(connection.dialect.name, PushStagedChunk.__table__)
        connection.execute(
            statement.on_conflict_do_update(
                index_elements=["user_id", "chunk_hash"],
                set_={"staged_at": statement.excluded.staged_at},
            ),
            rows,
        )


def forget_staged_before(db: Database, cutoff: datetime) -> int:
    """Drop staging rows older than ``cutoff`` (their chunks are gc's now); returns how many."""
    with db.write() as session:
        result = core(session).execute(
            delete(PushStagedChunk).where(PushStagedChunk.staged_at <= cutoff)
        )
        return int(result.rowcount or 0)


def staged_after(grace_seconds: float) -> datetime:
    """The oldest staging time still trusted: gc may collect an older chunk at any moment."""
    return utcnow() - timedelta(seconds=grace_seconds)
