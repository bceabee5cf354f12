"""The quota of chunked uploads: chunks count against the uploader's quota from the first one.

The bytes a user may still send to his upload sessions are his quota less the live files of his
tree less the chunks already held by all his sessions (``sessions.pending_bytes``). A chunk is
checked twice: against its declared ``Content-Length`` (and the session's ``OC-Total-Length``)
before its body is read, and again when it is recorded, under the user's tree lock (the lock file
writes take), so concurrent chunks and PUTs cannot together pass the limit. The final ``MOVE``
is charged by ``oxidav.tree.write_file`` on the tree only: the session's chunks are dropped in
that same transaction, so the bytes are never counted twice.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from oxidav.nextcloud.uploads.sessions import pending_bytes
from oxidav.tree import QuotaExceeded, quota_limit, used_bytes
from oxidav.tree.nodes import lock_tree
from oxidav.tree.quota import check_limit


def upload_room(session: Session, user_id: int, default_quota_bytes: int) -> int | None:
    """Bytes the user may still send to his upload sessions, or None for unlimited."""
    limit = quota_limit(session, user_id, default_quota_bytes)
    if limit is None:
        return None
    return max(0, limit - used_bytes(session, user_id) - pending_bytes(session, user_id))


def check_room(
    session: Session, user_id: int, default_quota_bytes: int, need: int, what: str
) -> None:
    """Raise ``QuotaExceeded`` if ``need`` more bytes do not fit (a read, no lock)."""
    room = upload_room(session, user_id, default_quota_bytes)
    if room is not None and need > room:
        raise QuotaExceeded(f"{what} of {need} bytes exceeds the quota")


def charge_chunk(session: Session, user_id: int, default_quota_bytes: int, growth: int) -> None:
    """Under the user's tree lock: raise ``QuotaExceeded`` if a chunk adding ``growth`` bytes
    would take the tree plus the pending chunks over the quota."""
    root = lock_tree(session, user_id)
    limit = quota_limit(session, user_id, default_quota_bytes)
    if limit is not None and growth > 0:
        check_limit(limit, root.size + pending_bytes(session, user_id) + growth)
