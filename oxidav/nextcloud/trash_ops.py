"""The trash as the trashbin needs it: list a user's trash roots, restore one.

Listing and purging use ``oxidav.tree.trash``; ``restore`` is here because the tree has no
restore operation yet (it belongs in ``oxidav.tree.trash`` and should move there). A trash
root keeps its original path and its subtree keeps its paths, so restoring to the original
place only clears the trash marks, re-links the root under the folder now living at its
original parent path, and rolls the size back up — in one transaction under the tree lock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from oxidav.db import utcnow
from oxidav.db.models.tree import Node
from oxidav.tree import Conflict, NotFound, PreconditionFailed, lock_tree, resolve
from oxidav.tree.names import parent_path
from oxidav.tree.nodes import propagate


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


def restore(session: Session, user_id: int, item_id: int) -> str:
    """Put trash root ``item_id`` back at its original path; return that path.

    Raises ``NotFound`` (no such trash item), ``PreconditionFailed`` (something lives at the
    original path now: 412) or ``Conflict`` (its original folder is gone: 409).
    """
    lock_tree(session, user_id)
    found = list_items(session, user_id, item_id)
    if not found:
        raise NotFound(f"trash item {item_id}")
    item = found[0]
    if resolve(session, user_id, item.original_path) is not None:
        raise PreconditionFailed(f"{item.original_path!r} exists")
    parent = resolve(session, user_id, parent_path(item.original_path))
    if parent is None or not parent.is_folder:
        raise Conflict(f"the folder of {item.original_path!r} is gone")
    session.execute(
        update(Node)
        .where(Node.trash_root_id == item.id)
        .values(trashed_at=None, trash_root_id=None)
        .execution_options(synchronize_session=False)
    )
    session.execute(
        update(Node)
        .where(Node.id == item.id)
        .values(parent_id=parent.id, original_parent_id=None, original_path=None)
        .execution_options(synchronize_session=False)
    )
    propagate(session, user_id, parent.path, item.size, utcnow())
    return item.original_path
