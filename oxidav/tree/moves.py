"""MOVE and COPY (RFC 4918 §9.8, §9.9), each in the caller's one transaction.

MOVE updates the moved node's row and rewrites the path prefix of its subtree in one UPDATE;
ids (Nextcloud file ids), etags and dead properties stay. COPY inserts new rows that point at
the same manifests (one incref per copy; no bytes are copied) and duplicates dead properties.
With ``overwrite`` an existing destination is first moved to the trash, as the DELETE that
§9.8.4 / §9.9.3 require.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, literal, update
from sqlalchemy.orm import Session

from oxidav.db import utcnow
from oxidav.db.models.tree import Node
from oxidav.tree.errors import Forbidden, NotFound, PreconditionFailed
from oxidav.tree.listing import list_subtree
from oxidav.tree.names import base_name, is_same_or_below, parent_path, subtree_bounds
from oxidav.tree.nodes import lock_tree, new_etag, propagate, resolve
from oxidav.tree.props import copy_props
from oxidav.tree.quota import check_quota
from oxidav.tree.trash import trash_node
from oxidav.tree.types import ContentRefs, NodeInfo
from oxidav.tree.writes import insert_node, parent_folder


@dataclass(frozen=True)
class TransferResult:
    node: NodeInfo
    #: True when the destination did not exist before (201), False when replaced (204).
    created: bool


def _prepare(
    session: Session, user_id: int, src_path: str, dst_path: str, overwrite: bool
) -> tuple[NodeInfo, NodeInfo, bool]:
    """Checks shared by MOVE and COPY; trashes a replaced destination. Returns src, dst parent."""
    lock_tree(session, user_id)
    src = resolve(session, user_id, src_path)
    if src is None:
        raise NotFound(src_path)
    if src.parent_id is None:
        raise Forbidden("the root folder cannot be moved or copied")
    if is_same_or_below(src_path, dst_path):
        raise Forbidden("the destination is the source or below it")
    if is_same_or_below(dst_path, src_path):
        raise Forbidden("the destination contains the source")
    dst_parent = parent_folder(session, user_id, dst_path)
    existing = resolve(session, user_id, dst_path)
    if existing is not None:
        if not overwrite:
            raise PreconditionFailed(f"{dst_path!r} exists and Overwrite is F")
        trash_node(session, user_id, dst_path)
        dst_parent = parent_folder(session, user_id, dst_path)
    return src, dst_parent, existing is None


def move_node(
    session: Session, user_id: int, src_path: str, dst_path: str, *, overwrite: bool = True
) -> TransferResult:
    """MOVE ``src_path`` to ``dst_path`` within one user's tree."""
    src, dst_parent, created = _prepare(session, user_id, src_path, dst_path, overwrite)
    now = utcnow()
    session.execute(
        update(Node)
        .where(Node.id == src.id)
        .values(parent_id=dst_parent.id, name=base_name(dst_path), path=dst_path)
        .execution_options(synchronize_session=False)
    )
    if src.is_folder:
        lo, hi = subtree_bounds(src_path)
        session.execute(
            update(Node)
            .where(
                Node.user_id == user_id,
                Node.trashed_at.is_(None),
                Node.path >= lo,
                Node.path < hi,
            )
            .values(path=literal(dst_path) + func.substr(Node.path, len(src_path) + 1))
            .execution_options(synchronize_session=False)
        )
    propagate(session, user_id, parent_path(src_path), -src.size, now)
    propagate(session, user_id, dst_parent.path, src.size, now)
    moved = resolve(session, user_id, dst_path)
    assert moved is not None
    return TransferResult(moved, created)


def copy_node(
    session: Session,
    refs: ContentRefs,
    user_id: int,
    src_path: str,
    dst_path: str,
    *,
    overwrite: bool = True,
    depth_infinity: bool = True,
    default_quota_bytes: int = 0,
) -> TransferResult:
    """COPY ``src_path`` to ``dst_path``; a folder with its members unless ``depth_infinity`` is
    False (Depth: 0, §9.8.3: the folder and its properties only)."""
    src, dst_parent, created = _prepare(session, user_id, src_path, dst_path, overwrite)
    nodes = [src]
    if src.is_folder and depth_infinity:
        nodes.extend(list_subtree(session, user_id, src_path))
    added = sum(n.size for n in nodes if not n.is_folder)
    root = resolve(session, user_id, "")
    assert root is not None
    if added > 0:
        check_quota(session, user_id, root.size + added, default_quota_bytes)
    now = utcnow()
    first = copy_rows(session, refs, nodes, user_id, dst_parent, dst_path, now, depth_infinity)
    propagate(session, user_id, dst_parent.path, added, now)
    return TransferResult(first, created)


def copy_rows(
    session: Session,
    refs: ContentRefs,
    nodes: list[NodeInfo],
    user_id: int,
    dst_parent: NodeInfo,
    dst_path: str,
    now: datetime,
    depth_infinity: bool = True,
) -> NodeInfo:
    """Insert copies of ``nodes`` (a subtree's root first, every folder before its members)
    into ``user_id``'s tree at ``dst_path`` below ``dst_parent``: new ids and etags, the same
    manifests (one incref each), dead properties copied. Returns the copy of the root. The
    caller locks the tree, checks quota and rolls the size up."""
    src = nodes[0]
    id_map: dict[int, int] = {}
    manifests: Counter[str] = Counter()
    first: NodeInfo | None = None
    for node in nodes:
        new_parent = dst_parent.id if node is src else id_map[node.parent_id or 0]
        copied = insert_node(
            session,
            {
                "user_id": user_id,
                "parent_id": new_parent,
                "name": base_name(dst_path) if node is src else node.name,
                "path": dst_path + node.path[len(src.path) :],
                "is_folder": node.is_folder,
                "size": node.size if (depth_infinity or not node.is_folder) else 0,
                "mtime": node.mtime,
                "created_at": now,
                "etag": new_etag(),
                "manifest_hash": node.manifest_hash,
                "content_hash": node.content_hash,
                "mime_type": node.mime_type,
                "checksums": node.checksums,
            },
        )
        first = first or copied
        id_map[node.id] = copied.id
        if node.manifest_hash is not None:
            manifests[node.manifest_hash] += 1
    for manifest_hash, n in manifests.items():
        refs.incref(session, manifest_hash, n)
    copy_props(session, id_map)
    assert first is not None
    return first
