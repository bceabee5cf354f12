"""Reading nodes by path or id, the per-user write lock, and the folder etag/size roll-up.

Every write transaction first calls ``lock_tree``: it locks the user's root row
(``SELECT … FOR UPDATE`` on PostgreSQL; SQLite's ``BEGIN IMMEDIATE`` already serializes
writers, so there ``tree.writes.write_file`` reads the root with the parent and the target in
one statement instead). All writers of a tree therefore take their row locks root first, so
concurrent writers queue instead of deadlocking, and a check-then-write (does the name exist?
does the quota allow it?) cannot race. ``propagate`` then gives the changed folder and all its
ancestors a new etag, adjusts their rolled-up size and mtime in one UPDATE
(docs/architecture.md#nodes: a Nextcloud client skips every subtree whose etag did not change).

The statements of these hot paths (every request resolves nodes, every write locks the tree and
rolls up) are built once at import with bind parameters and run on the session's connection
(``oxidav.db.core``): building a statement costs several times more than running it.
"""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any

from sqlalchemy import Select, bindparam, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from oxidav.db import Database, Transaction, core, utcnow
from oxidav.db.models.tree import Node
from oxidav.db.prepared import Prepared
from oxidav.tree.names import ancestor_paths
from oxidav.tree.types import NODE_COLUMNS, NodeInfo

FOLDER_MIME = "httpd/unix-directory"


def new_etag() -> str:
    """A fresh random entity tag (strong, unquoted; RFC 9110 §8.8.3)."""
    return secrets.token_hex(8)


def select_live() -> Select[*tuple[Any, ...]]:
    """``SELECT <NodeInfo columns> FROM nodes WHERE trashed_at IS NULL``."""
    return select(*NODE_COLUMNS).where(Node.trashed_at.is_(None))


_BY_PATH = select_live().where(Node.user_id == bindparam("user_id"), Node.path == bindparam("path"))
_BY_PATHS = select_live().where(
    Node.user_id == bindparam("user_id"), Node.path.in_(bindparam("paths", expanding=True))
)
_BY_ID = select_live().where(Node.id == bindparam("node_id"))
_CHILD = select_live().where(
    Node.parent_id == bindparam("parent_id"), Node.name == bindparam("name")
)
_ROOT_FOR_UPDATE = (
    select_live()
    .where(Node.user_id == bindparam("user_id"), Node.parent_id.is_(None))
    .with_for_update()
)
#: Roll-ups of up to this folder depth run as ``Prepared`` statements, one per depth (an
#: expanding IN list is rendered per call); deeper ones through ``Connection.execute``.
ROLL_UP_PREPARED_DEPTH = 16


def _roll_up(paths: Any) -> Any:
    return (
        update(Node)
        .where(
            Node.user_id == bindparam("owner_id"),
            Node.trashed_at.is_(None),
            Node.is_folder.is_(True),
            Node.path.in_(paths),
        )
        .values(
            etag=bindparam("new_etag"),
            size=Node.size + bindparam("delta", type_=Node.size.type),
            mtime=bindparam("new_mtime", type_=Node.mtime.type),
        )
    )


_ROLL_UP = _roll_up(bindparam("folder_paths", expanding=True))
#: ``_ROLL_UP_BY_DEPTH[n - 1]``: the roll-up of ``n`` folders (the root and n - 1 below it).
_ROLL_UP_BY_DEPTH = tuple(
    Prepared(_roll_up([bindparam(f"folder_{i}") for i in range(n)]))
    for n in range(1, ROLL_UP_PREPARED_DEPTH + 1)
)


def resolve(session: Transaction, user_id: int, path: str) -> NodeInfo | None:
    """The live node at ``path`` (materialized form, see ``names.normalize_path``)."""
    row = core(session).execute(_BY_PATH, {"user_id": user_id, "path": path}).first()
    return None if row is None else NodeInfo.from_row(row)


def resolve_many(session: Session, user_id: int, paths: list[str]) -> dict[str, NodeInfo]:
    """The live nodes at ``paths`` (one query), by path; missing paths are absent."""
    rows = core(session).execute(_BY_PATHS, {"user_id": user_id, "paths": paths})
    return {node.path: node for node in map(NodeInfo.from_row, rows)}


def get_node(session: Session, node_id: int) -> NodeInfo | None:
    """The live node with id ``node_id``."""
    row = core(session).execute(_BY_ID, {"node_id": node_id}).first()
    return None if row is None else NodeInfo.from_row(row)


def child(session: Transaction, parent_id: int, name: str) -> NodeInfo | None:
    """The live child ``name`` of folder ``parent_id``."""
    row = core(session).execute(_CHILD, {"parent_id": parent_id, "name": name}).first()
    return None if row is None else NodeInfo.from_row(row)


def _insert_root(session: Transaction, user_id: int) -> None:
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


def lock_tree(session: Transaction, user_id: int) -> NodeInfo:
    """Take the user's tree write lock (the root row) and return the root; create it if absent."""
    params = {"user_id": user_id}
    row = core(session).execute(_ROOT_FOR_UPDATE, params).first()
    if row is None:
        _insert_root(session, user_id)
        row = core(session).execute(_ROOT_FOR_UPDATE, params).first()
        assert row is not None
    return NodeInfo.from_row(row)


def propagate(
    session: Transaction,
    user_id: int,
    folder_path: str,
    size_delta: int,
    now: datetime | None = None,
) -> None:
    """A child of ``folder_path`` changed: new etag, size += delta and mtime for it and above."""
    paths = ancestor_paths(folder_path)
    params: dict[str, Any] = {
        "owner_id": user_id,
        "new_etag": new_etag(),
        "delta": size_delta,
        "new_mtime": now or utcnow(),
    }
    if len(paths) > ROLL_UP_PREPARED_DEPTH:
        core(session).execute(_ROLL_UP, {**params, "folder_paths": paths})
        return
    params.update((f"folder_{i}", path) for i, path in enumerate(paths))
    _ROLL_UP_BY_DEPTH[len(paths) - 1].run(core(session), params)
