"""The trash within the quota, as Nextcloud's files_trashbin keeps it ("auto" retention).

Nextcloud does not count the trash in the used bytes it reports (``quota-used-bytes``,
``quota-available-bytes`` and the OCS user quota see the live files only: its quota wrapper
covers ``files/``, the trash lives beside it), but it lets the trash hold at most half of the
space the live files leave free (``Trashbin::calculateFreeSpace``, ``DEFAULTMAXSIZE`` 50 %;
nothing once the live files fill the quota) and deletes the oldest trash first when it holds
more (``resizeTrash``). So live files plus trash never take more than the quota.

``make_room`` applies that rule to one user in the caller's transaction, under the user's
tree lock: after a DELETE (the trash grew) and after a write that grew the live files (the
free space shrank). Its work is bounded: at most ``EXPIRE_PER_REQUEST`` trash items go per
call; whatever is left goes on the next one. Users without a quota are left alone.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from oxidav.db import Transaction, core
from oxidav.db.models.tree import Node
from oxidav.tree.nodes import resolve
from oxidav.tree.quota import quota_limit
from oxidav.tree.trash import drop_rows
from oxidav.tree.types import ContentRefs

#: The share of the free space the trash may hold (Nextcloud's ``DEFAULTMAXSIZE``), percent.
TRASH_SHARE_PERCENT = 50
#: Trash items (a deleted file or folder with its subtree) expired per request at most.
EXPIRE_PER_REQUEST = 32

_TRASH_ROOTS = (Node.trash_root_id == Node.id) & Node.trashed_at.is_not(None)


def trash_allowance(limit: int, live_bytes: int) -> int:
    """Bytes the trash may hold given the quota ``limit`` and the live files' bytes."""
    free = limit - live_bytes
    return free * TRASH_SHARE_PERCENT // 100 if free > 0 else 0


def trash_bytes(session: Transaction, user_id: int) -> int:
    """Bytes held in the user's trash."""
    total = core(session).scalar(
        select(func.coalesce(func.sum(Node.size), 0)).where(Node.user_id == user_id, _TRASH_ROOTS)
    )
    return int(total or 0)


def make_room(
    session: Transaction, refs: ContentRefs, user_id: int, limit: int | None, live_bytes: int
) -> int:
    """Expire the user's oldest trash until it fits its allowance (at most
    ``EXPIRE_PER_REQUEST`` items); returns how many went. The caller holds the tree lock."""
    if limit is None:
        return 0
    allowance = trash_allowance(limit, live_bytes)
    held = trash_bytes(session, user_id)
    if held <= allowance:
        return 0
    oldest = core(session).execute(
        select(Node.id, Node.size)
        .where(Node.user_id == user_id, _TRASH_ROOTS)
        .order_by(Node.trashed_at, Node.id)
        .limit(EXPIRE_PER_REQUEST)
    )
    expired = 0
    for node_id, size in oldest.all():
        if held <= allowance:
            break
        drop_rows(session, refs, Node.trash_root_id == node_id)
        held -= int(size)
        expired += 1
    return expired


def make_room_after_delete(
    session: Session, refs: ContentRefs, user_id: int, default_quota_bytes: int = 0
) -> int:
    """``make_room`` once a DELETE has moved something to the trash (the tree lock held)."""
    limit = quota_limit(session, user_id, default_quota_bytes)
    if limit is None:
        return 0
    root = resolve(session, user_id, "")
    return make_room(session, refs, user_id, limit, 0 if root is None else root.size)
