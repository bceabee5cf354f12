"""Quotas (RFC 4331): the limit of a user and the bytes they use.

The limit is ``users.quota_bytes`` when set (a negative value means unlimited), else the
installation's ``Settings.default_quota_bytes`` (0 means unlimited). Used bytes are the rolled-up
size of the user's root folder: the live files, not the trash (as Nextcloud reports them; the
trash is kept within half of the free space by ``oxidav.tree.trash_room``).
"""

from __future__ import annotations

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from oxidav.db import core
from oxidav.db.models.users import User
from oxidav.tree.errors import QuotaExceeded
from oxidav.tree.nodes import resolve

_OWN_LIMIT = select(User.quota_bytes).where(User.id == bindparam("user_id"))
#: ``users.quota_bytes`` of ``:user_id`` as a column of another query (``tree.writes``).
OWN_LIMIT_COLUMN = _OWN_LIMIT.scalar_subquery()


def effective_limit(own: int | None, default_quota_bytes: int = 0) -> int | None:
    """The quota in bytes given the user's own setting ``own``, or None for unlimited."""
    if own is None:
        return default_quota_bytes if default_quota_bytes > 0 else None
    return None if own < 0 else own


def quota_limit(session: Session, user_id: int, default_quota_bytes: int = 0) -> int | None:
    """The user's quota in bytes, or None for unlimited."""
    own = core(session).execute(_OWN_LIMIT, {"user_id": user_id}).scalar()
    return effective_limit(own, default_quota_bytes)


def used_bytes(session: Session, user_id: int) -> int:
    """Bytes of live files in the user's tree."""
    root = resolve(session, user_id, "")
    return 0 if root is None else root.size


def available_bytes(session: Session, user_id: int, default_quota_bytes: int = 0) -> int | None:
    """Bytes the user may still store, or None for unlimited."""
    limit = quota_limit(session, user_id, default_quota_bytes)
    if limit is None:
        return None
    return max(0, limit - used_bytes(session, user_id))


def check_quota(
    session: Session, user_id: int, used_after: int, default_quota_bytes: int = 0
) -> None:
    """Raise ``QuotaExceeded`` if the tree would hold more than the limit after a write."""
    check_limit(quota_limit(session, user_id, default_quota_bytes), used_after)


def check_limit(limit: int | None, used_after: int) -> None:
    """Raise ``QuotaExceeded`` if ``used_after`` bytes exceed ``limit`` (None: unlimited)."""
    if limit is not None and used_after > limit:
        raise QuotaExceeded(f"quota of {limit} bytes exceeded")
