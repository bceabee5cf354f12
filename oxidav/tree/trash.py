"""DELETE moves a node and its subtree to the trash; purging drops the rows and their content.

Trashing marks every live row of the subtree with ``trashed_at`` and ``trash_root_id`` (the
deleted node) in one UPDATE and subtracts the subtree's size from the ancestors; the trash
still references the content, so nothing is decref'd until the purge. A node trashed on its
own earlier keeps its own trash root, so restoring or purging one never touches the other.
A trash root keeps its original path and its subtree keeps its paths, so ``restore`` (to the
original place) only clears the trash marks, re-links the root under the folder now living at
its original parent path and rolls the size back up. ``release_user_content`` drops every
node of a user with its content references (removing the user).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.orm import Session

from oxidav.db import Database, Transaction, utcnow
from oxidav.db.models.tree import Node
from oxidav.tree.errors import Conflict, Forbidden, NotFound, PreconditionFailed
from oxidav.tree.names import parent_path, subtree_bounds
from oxidav.tree.nodes import lock_tree, propagate, resolve
from oxidav.tree.quota import check_quota
from oxidav.tree.types import ContentRefs, NodeInfo


def trash_node(
    session: Session, user_id: int, path: str, *, now: datetime | None = None
) -> NodeInfo:
    """Move the live node at ``path`` (and everything below it) to the trash."""
    lock_tree(session, user_id)
    node = resolve(session, user_id, path)
    if node is None:
        raise NotFound(path)
    if node.parent_id is None:
        raise Forbidden("the root folder cannot be deleted")
    now = now or utcnow()
    lo, hi = subtree_bounds(path)
    session.execute(
        update(Node)
        .where(
            Node.user_id == user_id,
            Node.trashed_at.is_(None),
            or_(Node.id == node.id, (Node.path >= lo) & (Node.path < hi)),
        )
        .values(trashed_at=now, trash_root_id=node.id)
        .execution_options(synchronize_session=False)
    )
    session.execute(
        update(Node)
        .where(Node.id == node.id)
        .values(original_parent_id=node.parent_id, original_path=path)
        .execution_options(synchronize_session=False)
    )
    propagate(session, user_id, parent_path(path), -node.size, now)
    return node


def drop_rows(session: Transaction, refs: ContentRefs, condition: object) -> int:
    """Delete the rows matching ``condition`` and drop their content references."""
    counts = session.execute(
        select(Node.manifest_hash, func.count())
        .where(condition, Node.manifest_hash.is_not(None))  # type: ignore[arg-type]
        .group_by(Node.manifest_hash)
    ).all()
    for manifest_hash, n in counts:
        refs.decref(session, str(manifest_hash), int(n))
    result = session.execute(
        delete(Node).where(condition).execution_options(synchronize_session=False)  # type: ignore[arg-type]
    )
    return int(result.rowcount)  # type: ignore[attr-defined]


def purge(session: Session, refs: ContentRefs, trash_root_id: int) -> int:
    """Delete the rows trashed together with ``trash_root_id``; drop their content references."""
    return drop_rows(session, refs, Node.trash_root_id == trash_root_id)


def delete_live_file(session: Session, refs: ContentRefs, user_id: int, path: str) -> None:
    """Remove a live file without trashing it (undoing a LOCK's empty-file creation)."""
    lock_tree(session, user_id)
    node = resolve(session, user_id, path)
    if node is None or node.is_folder:
        return
    drop_rows(session, refs, Node.id == node.id)
    propagate(session, user_id, parent_path(path), -node.size)


def restore(
    session: Session,
    user_id: int,
    node_id: int,
    *,
    default_quota_bytes: int = 0,
    now: datetime | None = None,
) -> NodeInfo:
    """Put trash root ``node_id`` (with its subtree) back at its original path; return it.

    Raises ``NotFound`` (no such trash root of this user), ``PreconditionFailed`` (something
    lives at the original path now: 412), ``Conflict`` (the original folder is gone: 409) or
    ``QuotaExceeded`` (the restored bytes count against the quota again: 507).
    """
    root = lock_tree(session, user_id)
    row = session.execute(
        select(Node.original_path, Node.size).where(
            Node.id == node_id, Node.user_id == user_id, Node.trash_root_id == Node.id
        )
    ).first()
    if row is None or row[0] is None:
        raise NotFound(f"trash item {node_id}")
    path, size = str(row[0]), int(row[1])
    if resolve(session, user_id, path) is not None:
        raise PreconditionFailed(f"{path!r} exists")
    parent = resolve(session, user_id, parent_path(path))
    if parent is None or not parent.is_folder:
        raise Conflict(f"the folder of {path!r} is gone")
    if size > 0:
        check_quota(session, user_id, root.size + size, default_quota_bytes)
    session.execute(
        update(Node)
        .where(Node.trash_root_id == node_id)
        .values(trashed_at=None, trash_root_id=None)
        .execution_options(synchronize_session=False)
    )
    session.execute(
        update(Node)
        .where(Node.id == node_id)
        .values(parent_id=parent.id, original_parent_id=None, original_path=None)
        .execution_options(synchronize_session=False)
    )
    propagate(session, user_id, parent.path, size, now or utcnow())
    restored = resolve(session, user_id, path)
    assert restored is not None
    return restored


def release_user_content(session: Session, refs: ContentRefs, user_id: int) -> int:
    """Delete every node of ``user_id`` (live and trashed) and drop their content references.

    The first step of removing a user: the ``users`` row cascade would drop the rows without
    the decrefs, leaking their content. Locks the user's tree (without creating a root).
    Returns how many rows went.
    """
    session.execute(
        select(Node.id).where(Node.user_id == user_id, Node.parent_id.is_(None)).with_for_update()
    ).all()
    return drop_rows(session, refs, Node.user_id == user_id)


def list_trash(session: Session, user_id: int) -> list[tuple[int, str, datetime | None]]:
    """The user's trash roots: ``(node id, original path, trashed at)``, newest first."""
    rows = session.execute(
        select(Node.id, Node.original_path, Node.trashed_at)
        .where(Node.user_id == user_id, Node.trash_root_id == Node.id)
        .order_by(Node.trashed_at.desc())
    ).all()
    return [(int(i), str(p), t) for i, p, t in rows]


def purge_trashed_before(db: Database, refs: ContentRefs, cutoff: datetime) -> int:
    """Purge every trash root trashed before ``cutoff`` (one transaction each); return how many."""
    with db.read() as session:
        roots = session.execute(
            select(Node.id, Node.user_id).where(
                Node.trash_root_id == Node.id, Node.trashed_at < cutoff
            )
        ).all()
    for node_id, user_id in roots:
        with db.write() as session:
            lock_tree(session, user_id)
            purge(session, refs, node_id)
    return len(roots)
