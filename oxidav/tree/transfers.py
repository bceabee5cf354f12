"""MOVE and COPY between two users' trees: a file moved into, out of or between shared folders.

Within one tree a MOVE is a row update (``oxidav.tree.moves``). Across trees the rows change
owner, quota and ancestors, so the destination receives copies of the source rows — the same
manifests with one incref each, no bytes copied, dead properties along — and a MOVE then drops
the source rows (one decref each), all in the caller's one transaction: the content is never in
neither tree, and after a MOVE never in both. As in Nextcloud, a move across storages leaves
nothing in the source owner's trash and gives the moved items new file ids. The destination
owner's quota is charged. Both trees are locked in user-id order, so two transfers in opposite
directions cannot deadlock.

Whether the caller may do it (read or delete on the source side, create or overwrite on the
destination side) is decided before, in ``oxidav.authz``.
"""

from __future__ import annotations

from sqlalchemy import or_
from sqlalchemy.orm import Session

from oxidav.db import utcnow
from oxidav.db.models.tree import Node
from oxidav.tree.errors import Forbidden, NotFound, PreconditionFailed
from oxidav.tree.listing import list_subtree
from oxidav.tree.moves import TransferResult, copy_rows
from oxidav.tree.names import parent_path, subtree_bounds
from oxidav.tree.nodes import lock_tree, propagate, resolve
from oxidav.tree.quota import check_quota
from oxidav.tree.trash import drop_rows, trash_node
from oxidav.tree.types import ContentRefs
from oxidav.tree.writes import parent_folder


def transfer_node(
    session: Session,
    refs: ContentRefs,
    src_user_id: int,
    src_path: str,
    dst_user_id: int,
    dst_path: str,
    *,
    move: bool,
    overwrite: bool = True,
    depth_infinity: bool = True,
    default_quota_bytes: int = 0,
) -> TransferResult:
    """COPY (``move=False``) or MOVE ``src_path`` of one user's tree to ``dst_path`` of another
    user's tree. ``depth_infinity`` False copies a folder without its members (a MOVE always
    takes the whole subtree)."""
    if src_user_id == dst_user_id:
        raise ValueError("a transfer is between two trees; use move_node / copy_node")
    for user_id in sorted((src_user_id, dst_user_id)):
        lock_tree(session, user_id)
    src = resolve(session, src_user_id, src_path)
    if src is None:
        raise NotFound(src_path)
    if src.parent_id is None:
        raise Forbidden("the root folder cannot be moved or copied")
    dst_parent = parent_folder(session, dst_user_id, dst_path)
    existing = resolve(session, dst_user_id, dst_path)
    if existing is not None:
        if not overwrite:
            raise PreconditionFailed(f"{dst_path!r} exists and Overwrite is F")
        trash_node(session, dst_user_id, dst_path)
        dst_parent = parent_folder(session, dst_user_id, dst_path)
    whole = move or depth_infinity
    nodes = [src]
    if src.is_folder and whole:
        nodes.extend(list_subtree(session, src_user_id, src_path))
    added = sum(n.size for n in nodes if not n.is_folder)
    if added > 0:
        dst_root = resolve(session, dst_user_id, "")
        assert dst_root is not None
        check_quota(session, dst_user_id, dst_root.size + added, default_quota_bytes)
    now = utcnow()
    first = copy_rows(session, refs, nodes, dst_user_id, dst_parent, dst_path, now, whole)
    propagate(session, dst_user_id, dst_parent.path, added, now)
    if move:
        lo, hi = subtree_bounds(src_path)
        drop_rows(
            session,
            refs,
            (Node.user_id == src_user_id)
            & Node.trashed_at.is_(None)
            & or_(Node.id == src.id, (Node.path >= lo) & (Node.path < hi)),
        )
        propagate(session, src_user_id, parent_path(src_path), -src.size, now)
    return TransferResult(first, existing is None)


__all__ = ["transfer_node"]
