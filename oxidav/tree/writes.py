"""Creating folders and writing file versions, each in the caller's (one) transaction.

``write_file`` records a content version that the blob chain has already made durable
(``BlobChain.ingest``): it takes a reference on the new manifest and drops the one on the old
version in the same transaction as the node row changes, so a version is visible exactly when
it is referenced, and a crash or a failed precondition leaves the previous version (or no file)
— never a half-written one. Preconditions observed at the start of a request are re-checked
here, under the tree lock, so a concurrent writer cannot slip in between.
"""

from __future__ import annotations

import mimetypes
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.orm import Session

from oxidav.db import Transaction, core, utcnow
from oxidav.db.models.tree import Node
from oxidav.db.prepared import Prepared
from oxidav.tree.errors import AlreadyExists, Conflict, IsAFolder, PreconditionFailed
from oxidav.tree.names import base_name, parent_path
from oxidav.tree.nodes import (
    FOLDER_MIME,
    child,
    lock_tree,
    new_etag,
    propagate,
    resolve,
)
from oxidav.tree.quota import OWN_LIMIT_COLUMN, check_limit, effective_limit
from oxidav.tree.trash_room import make_room
from oxidav.tree.types import NODE_COLUMNS, ContentFacts, ContentRefs, NodeInfo


@dataclass(frozen=True)
class WriteResult:
    node: NodeInfo
    created: bool


def guess_mime_type(name: str) -> str:
    """The MIME type of a file, from its name (as Nextcloud does; client types are ignored)."""
    return mimetypes.guess_type(name, strict=False)[0] or "application/octet-stream"


def parent_folder(session: Session, user_id: int, path: str) -> NodeInfo:
    """The live folder that is or would be the parent of ``path``; 409 otherwise."""
    parent = resolve(session, user_id, parent_path(path))
    if parent is None or not parent.is_folder:
        raise Conflict(f"the parent of {path!r} is not an existing folder")
    return parent


#: Built once (see ``oxidav.tree.nodes``); the columns written are the keys of the parameters.
_INSERT = Prepared(insert(Node).returning(*NODE_COLUMNS))
_UPDATE = Prepared(update(Node).where(Node.id == bindparam("node_id")).returning(*NODE_COLUMNS))
#: What a file write reads, in one statement: the root (its size is the used bytes), the
#: parent and the target, each row also carrying the user's own quota setting.
_WRITE_CONTEXT = Prepared(
    select(*NODE_COLUMNS, OWN_LIMIT_COLUMN).where(
        Node.user_id == bindparam("user_id"),
        Node.trashed_at.is_(None),
        Node.path.in_([bindparam("root"), bindparam("parent"), bindparam("path")]),
    )
)


@dataclass(frozen=True)
class WriteContext:
    """What a file write reads first, under the tree write lock: the user's root (its size is
    the used bytes), the live nodes at the parent and the target path (by path; a missing one
    is absent) and the user's own quota setting."""

    root: NodeInfo
    found: dict[str, NodeInfo]
    own_limit: int | None


def read_write_context(session: Transaction, user_id: int, path: str) -> WriteContext:
    """Take the tree write lock and read the ``WriteContext`` of a write to ``path``. On
    SQLite the write transaction already holds the database's write lock (``BEGIN
    IMMEDIATE``), so one statement reads all of it; on PostgreSQL the root row is locked first
    (``lock_tree``: every writer locks root first)."""
    connection = core(session)
    if connection.dialect.name != "sqlite":
        lock_tree(session, user_id)
    params = {"user_id": user_id, "root": "", "parent": parent_path(path), "path": path}
    rows = _WRITE_CONTEXT.run(connection, params).rows
    if not any(row[4] == "" for row in rows):  # no root yet: lock_tree creates it
        lock_tree(session, user_id)
        rows = _WRITE_CONTEXT.run(connection, params).rows
    found = {row[4]: NodeInfo.from_row(row[:-1]) for row in rows}
    own_limit: Any = rows[0][-1]
    return WriteContext(found[""], found, own_limit)


def insert_node(session: Transaction, values: dict[str, object]) -> NodeInfo:
    row = _INSERT.run(core(session), values).one()
    return NodeInfo.from_row(row)


def make_folder(
    session: Session, user_id: int, path: str, *, mtime: datetime | None = None
) -> NodeInfo:
    """MKCOL (RFC 4918 §9.3): create an empty folder at ``path``."""
    lock_tree(session, user_id)
    parent = parent_folder(session, user_id, path)
    name = base_name(path)
    if child(session, parent.id, name) is not None:
        raise AlreadyExists(f"{path!r} already exists")
    node = insert_folder(session, user_id, parent, name, mtime=mtime)
    propagate(session, user_id, parent.path, 0, node.created_at)
    return node


def insert_folder(
    session: Session | Transaction,
    user_id: int,
    parent: NodeInfo,
    name: str,
    *,
    mtime: datetime | None = None,
) -> NodeInfo:
    """The row of a new empty folder ``name`` in ``parent`` (no checks, no roll-up)."""
    now = utcnow()
    return insert_node(
        session,
        {
            "user_id": user_id,
            "parent_id": parent.id,
            "name": name,
            "path": f"{parent.path}/{name}",
            "is_folder": True,
            "size": 0,
            "mtime": mtime or now,
            "created_at": now,
            "etag": new_etag(),
            "mime_type": FOLDER_MIME,
        },
    )


def write_file(
    session: Transaction,
    refs: ContentRefs,
    user_id: int,
    path: str,
    content: ContentFacts | None,
    *,
    mtime: datetime | None = None,
    checksums: str | None = None,
    require_etag: str | None = None,
    require_absent: bool = False,
    default_quota_bytes: int = 0,
    context: WriteContext | None = None,
    expire_trash: bool = False,
) -> WriteResult:
    """Make ``content`` (None: the empty content) the current version of the file at ``path``.

    ``require_etag``: the file must still exist with this etag (If-Match, RFC 9110 §13.1.1).
    ``require_absent``: the file must still not exist (If-None-Match: *, §13.1.2).
    ``context``: what ``read_write_context`` already read in this transaction.
    ``expire_trash``: a growing write expires the oldest trash beyond its share of the free
    space (``oxidav.tree.trash_room``; the client-facing writers ask for it).
    """
    if context is None:
        context = read_write_context(session, user_id, path)
    root, found, own_limit = context.root, context.found, context.own_limit
    parent = found.get(parent_path(path))
    if parent is None or not parent.is_folder:
        raise Conflict(f"the parent of {path!r} is not an existing folder")
    name = base_name(path)
    existing = found.get(path)
    if existing is not None and existing.is_folder:
        raise IsAFolder(f"{path!r} is a folder")
    if require_absent and existing is not None:
        raise PreconditionFailed(f"{path!r} exists")
    if require_etag is not None and (existing is None or existing.etag != require_etag):
        raise PreconditionFailed(f"{path!r} changed")
    size = content.size if content is not None else 0
    delta = size - (existing.size if existing is not None else 0)
    if delta > 0:
        limit = effective_limit(own_limit, default_quota_bytes)
        check_limit(limit, root.size + delta)
        if expire_trash:
            make_room(session, refs, user_id, limit, root.size + delta)
    now = utcnow()
    values: dict[str, object] = {
        "size": size,
        "mtime": mtime or now,
        "etag": new_etag(),
        "manifest_hash": content.manifest_hash if content is not None else None,
        "content_hash": content.content_hash if content is not None else None,
        "mime_type": guess_mime_type(name),
        "checksums": checksums,
    }
    # The same content again (a client re-uploading a file) keeps its one reference.
    old_hash = existing.manifest_hash if existing is not None else None
    new_hash = content.manifest_hash if content is not None else None
    if new_hash is not None and new_hash != old_hash:
        refs.incref(session, new_hash)
    if existing is None:
        values.update(
            user_id=user_id,
            parent_id=parent.id,
            name=name,
            path=path,
            is_folder=False,
            created_at=now,
        )
        node = insert_node(session, values)
    else:
        if old_hash is not None and old_hash != new_hash:
            refs.decref(session, old_hash)
        row = _UPDATE.run(core(session), {**values, "node_id": existing.id}).one()
        node = NodeInfo.from_row(row)
    propagate(session, user_id, parent.path, delta, now)
    return WriteResult(node, existing is None)


def set_mtime(session: Session, node_id: int, mtime: datetime) -> None:
    """Set a node's modification time (X-OC-Mtime, PROPPATCH of getlastmodified)."""
    session.execute(update(Node).where(Node.id == node_id).values(mtime=mtime))
