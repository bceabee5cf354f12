"""Reading nodes by path or id, the per-user write lock, and the folder etag/size roll-up.

Every write transaction first calls ``lock_tree``: it locks the user's root row
(``SELECT … FOR UPDATE`` on PostgreSQL; SQLite's ``BEGIN IMMEDIATE`` already serializes
writers). All writers of a tree therefore take their row locks root first, so concurrent writers
queue instead of deadlocking, and a check-then-write (does the name exist? does the quota
allow it?) cannot race. ``propagate`` then gives the changed folder and all its ancestors a new
etag, adjusts their rolled-up size and mtime in one UPDATE (DESIGN §6: a Nextcloud client skips
every subtree whose etag did not change).
"""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any

from sqlalchemy import Select, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from oxidav.db import Database, utcnow
from oxidav.db.models.tree import Node
from oxidav.tree.names import ancestor_paths
from oxidav.tree.types import NODE_COLUMNS, NodeInfo

FOLDER_MIME = "httpd/unix-directory"


def new_etag() -> str:
    """A fresh random entity tag (strong, unquoted; RFC 9110 §8.8.3)."""
    return secrets.token_hex(8)


def select_live() -> Select[*tuple[Any, ...]]:
    """``SELECT <NodeInfo columns> FROM nodes WHERE trashed_at IS NULL``."""
    return select(*NODE_COLUMNS).where(Node.trashed_at.is_(None))


def resolve(session: Session, user_id: int, path: str) -> NodeInfo | None:
    """The live node at ``path`` (materialized form, see ``names.normalize_path``)."""
    row = session.execute(select_live().where(Node.user_id == user_id, Node.path == path)).first()
    return None if row is None else NodeInfo.from_row(row)


def resolve_many(session: Session, user_id: int, paths: list[str]) -> dict[str, NodeInfo]:
    """The live nodes at ``paths`` (one query), by path; missing paths are absent."""
    rows = session.execute(select_live().where(Node.user_id == user_id, Node.path.in_(paths)))
    return {node.path: node for node in map(NodeInfo.from_row, rows)}


def get_node(session: Session, node_id: int) -> NodeInfo | None:
    """The live node with id ``node_id``."""
    row = session.execute(select_live().where(Node.id == node_id)).first()
    return None if row is None else NodeInfo.from_row(row)


def child(session: Session, parent_id: int, name: str) -> NodeInfo | None:
    """The live child ``name`` of folder ``parent_id``."""
    row = session.execute(
        select_live().where(Node.parent_id == parent_id, Node.name == name)
    ).first()
    return None if row is None else NodeInfo.from_row(row)


def _insert_root(session: Session, user_id: int) -> None:
    now = utcnow()
    session.execute(
        insert(Node).values(
            user_id=user_id,
            parent_id=None,
            name="",
            path="",
            is_folder=True,
            size=0,
            mtime=now,
            created_at=now,
            etag=new_etag(),
            mime_type=FOLDER_MIME,
        )
    )


def ensure_root(db: Database, user_id: int) -> NodeInfo:
    """The user's root folder, created on first use (race-safe: a unique index guards it)."""
    with db.read() as session:
        root = resolve(session, user_id, "")
    if root is not None:
        return root
    try:
        with db.write() as session:
            if resolve(session, user_id, "") is None:
                _insert_root(session, user_id)
    except IntegrityError:
        # Another process created it first (uq_nodes_user_root); read theirs below.
        pass
    with db.read() as session:
        root = resolve(session, user_id, "")
    if root is None:
        raise RuntimeError(f"could not create the root folder of user {user_id}")
    return root


def lock_tree(session: Session, user_id: int) -> NodeInfo:
    """Take the user's tree write lock (the root row) and return the root; create it if absent."""
    stmt = select_live().where(Node.user_id == user_id, Node.parent_id.is_(None))
    row = session.execute(stmt.with_for_update()).first()
    if row is None:
        _insert_root(session, user_id)
        row = session.execute(stmt.with_for_update()).first()
        assert row is not None
    return NodeInfo.from_row(row)


def propagate(
    session: Session, user_id: int, folder_path: str, size_delta: int, now: datetime | None = None
) -> None:
    """A child of ``folder_path`` changed: new etag, size += delta and mtime for it and above."""
    session.execute(
        update(Node)
        .where(
            Node.user_id == user_id,
            Node.trashed_at.is_(None),
            Node.is_folder.is_(True),
            Node.path.in_(ancestor_paths(folder_path)),
        )
        .values(etag=new_etag(), size=Node.size + size_delta, mtime=now or utcnow())
        .execution_options(synchronize_session=False)
    )
