"""The trash as the trashbin needs it: list a user's trash roots, restore one.

Listing reads the trash roots of ``oxidav.tree``'s nodes; restoring is the tree operation
``oxidav.tree.restore`` (to the original place, under the tree lock, with the etag roll-up
and the quota check), called here with the installation's default quota.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from oxidav.db.models.tree import Node
from oxidav.tree import restore as restore_node


@dataclass(frozen=True)
class TrashItem:
    """One trash root: the node that a DELETE moved to the trash."""

    id: int
    name: str
    original_path: str
    is_folder: bool
    size: int
    mtime: datetime
    etag: str
    mime_type: str
    trashed_at: datetime


_COLUMNS = (
    Node.id,
    Node.name,
    Node.original_path,
    Node.is_folder,
    Node.size,
    Node.mtime,
    Node.etag,
    Node.mime_type,
    Node.trashed_at,
)


def list_items(session: Session, user_id: int, item_id: int | None = None) -> list[TrashItem]:
    """The user's trash roots, newest first (or just ``item_id``)."""
    stmt = select(*_COLUMNS).where(Node.user_id == user_id, Node.trash_root_id == Node.id)
    if item_id is not None:
        stmt = stmt.where(Node.id == item_id)
    rows = session.execute(stmt.order_by(Node.trashed_at.desc(), Node.id.desc()))
    return [
        TrashItem(i, name, original or "", folder, size, mtime, etag, mime, trashed or mtime)
        for i, name, original, folder, size, mtime, etag, mime, trashed in rows
    ]


def restore(session: Session, user_id: int, item_id: int, default_quota_bytes: int = 0) -> str:
    """Put trash root ``item_id`` back at its original path; return that path.

    Raises the tree's ``NotFound`` (404), ``PreconditionFailed`` (something lives at the
    original path: 412), ``Conflict`` (its original folder is gone: 409) or ``QuotaExceeded``.
    """
    return restore_node(session, user_id, item_id, default_quota_bytes=default_quota_bytes).path
