"""Listing a folder (one keyset query per page) and walking a subtree (one range query).

Children are ordered by name, compared byte-wise on both backends; a page continues after the
last name of the previous one (keyset pagination over the ``(parent_id, name)`` index), so the
cost of a page does not grow with its offset.

``read_children_brief`` reads fewer columns for a listing that shows no creation date: a
child's user, parent and path are its folder's user, the folder and the folder's path plus its
name (the tree's invariant), so they are not read; its ``created_at`` is not read either and is
None. Everything else is the row's, as ``read_children`` gives it.

``read_listed_rows`` reads less again, for a listing that shows only what a file browser's
columns show (name, kind, length, type, time, etag): ``ListedRow``s, not nodes, so nothing takes
them for a node without its content hashes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import Select, bindparam, func, select
from sqlalchemy.orm import Session

from oxidav.db import Database
from oxidav.db.models.tree import Node
from oxidav.db.prepared import PreparedRead
from oxidav.tree.names import subtree_bounds
from oxidav.tree.nodes import select_live
from oxidav.tree.types import NodeInfo


def list_children(
    session: Session, folder_id: int, *, after: str | None = None, limit: int | None = None
) -> list[NodeInfo]:
    """The live children of ``folder_id`` ordered by name, starting after ``after``."""
    stmt = select_live().where(Node.parent_id == folder_id)
    if after is not None:
        stmt = stmt.where(Node.name > after)
    stmt = stmt.order_by(Node.name)
    if limit is not None:
        stmt = stmt.limit(limit)
    return [NodeInfo.from_row(row) for row in session.execute(stmt)]


class _PageReads:
    """A folder's page of children (``page``: the columns read, of one ``folder_id``) as two
    prepared reads: the first page, and the page after a name (keyset)."""

    def __init__(self, page: Select[*tuple[Any, ...]]) -> None:
        limited = page.order_by(Node.name).limit(bindparam("limit"))
        self._first = PreparedRead(limited)
        self._next = PreparedRead(limited.where(Node.name > bindparam("after")))

    def rows(
        self, db: Database, folder_id: int, after: str | None, limit: int
    ) -> list[tuple[Any, ...]]:
        if after is None:
            return self._first.rows(db, {"folder_id": folder_id, "limit": limit})
        return self._next.rows(db, {"folder_id": folder_id, "after": after, "limit": limit})


_PAGE = select_live().where(Node.parent_id == bindparam("folder_id"))
_PAGES = _PageReads(_PAGE)


def read_children(db: Database, folder_id: int, *, after: str | None, limit: int) -> list[NodeInfo]:
    """``list_children`` as one prepared statement outside any session (a folder listing's
    pages): no statement built and no ORM row handling per page."""
    return [NodeInfo.from_row(row) for row in _PAGES.rows(db, folder_id, after, limit)]


_BRIEF_PAGES = _PageReads(
    _PAGE.with_only_columns(
        Node.id,
        Node.name,
        Node.is_folder,
        Node.size,
        Node.mtime,
        Node.etag,
        Node.manifest_hash,
        Node.content_hash,
        Node.mime_type,
        Node.checksums,
    )
)


def read_children_brief(
    db: Database, folder: NodeInfo, *, after: str | None, limit: int
) -> list[NodeInfo]:
    """``read_children`` of ``folder`` for a listing that shows no creation date: the same
    nodes, with ``created_at`` None (not read), and user, parent and path taken from
    ``folder`` (module docstring)."""
    rows = _BRIEF_PAGES.rows(db, folder.id, after, limit)
    user_id, parent_id = folder.user_id, folder.id
    prefix = folder.path if folder.path.endswith("/") else folder.path + "/"
    new = tuple.__new__
    return [
        new(
            NodeInfo,
            (
                node_id,
                user_id,
                parent_id,
                name,
                prefix + name,
                is_folder,
                size,
                mtime,
                None,
                etag,
                manifest_hash,
                content_hash,
                mime_type,
                checksums,
            ),
        )
        for (
            node_id,
            name,
            is_folder,
            size,
            mtime,
            etag,
            manifest_hash,
            content_hash,
            mime_type,
            checksums,
        ) in rows
    ]


class ListedRow(NamedTuple):
    """What ``read_listed_rows`` reads of a child: the columns a listing of names, kinds,
    lengths, types, times and etags shows (``NodeInfo``'s fields of those names)."""

    id: int
    name: str
    is_folder: bool
    size: int
    mtime: datetime
    etag: str
    mime_type: str


_LISTED_PAGES = _PageReads(
    _PAGE.with_only_columns(
        Node.id, Node.name, Node.is_folder, Node.size, Node.mtime, Node.etag, Node.mime_type
    )
)


def read_listed_rows(
    db: Database, folder_id: int, *, after: str | None, limit: int
) -> list[ListedRow]:
    """``read_children``'s page of ``folder_id``, each child as a ``ListedRow``."""
    new = tuple.__new__
    return [new(ListedRow, row) for row in _LISTED_PAGES.rows(db, folder_id, after, limit)]


def list_subtree(session: Session, user_id: int, path: str) -> list[NodeInfo]:
    """All live strict descendants of ``path``, every folder before its members."""
    lo, hi = subtree_bounds(path)
    stmt = (
        select_live()
        .where(Node.user_id == user_id, Node.path >= lo, Node.path < hi)
        .order_by(Node.path)
    )
    return [NodeInfo.from_row(row) for row in session.execute(stmt)]


def count_subtree(session: Session, user_id: int, path: str) -> int:
    """How many live nodes are strictly below ``path``."""
    lo, hi = subtree_bounds(path)
    stmt = (
        select(func.count())
        .select_from(Node)
        .where(
            Node.user_id == user_id,
            Node.trashed_at.is_(None),
            Node.path >= lo,
            Node.path < hi,
        )
    )
    return int(session.scalar(stmt) or 0)
