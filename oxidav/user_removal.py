"""Removing a user together with the content references they hold (``oxidav user delete``).

The ``users`` row cascades to everything a user owns, but two kinds of rows hold references
on blob-chain manifests that a cascade would drop without a decref, so their chunks would
never become garbage: the user's tree nodes (live and trashed) and the chunks of their open
Nextcloud upload sessions. ``remove_user`` drops those through their rooms (``oxidav.tree``,
``oxidav.nextcloud.uploads``), decref'ing as it goes, and then deletes the user row, all in
one write transaction; content nobody else references is then collected by
``oxidav blobs gc``. Calendars, address books, app passwords and grants keep no blobs and go
with the cascade; the user's DAV locks (keyed by URL) are dropped explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, select

from oxidav.authz.authn.accounts import AccountError
from oxidav.blobs import BlobChain
from oxidav.db import Database
from oxidav.db.models.users import User
from oxidav.nextcloud.uploads.sessions import release_user_uploads
from oxidav.tree import release_user_content
from oxidav.tree.locks import delete_locks
from oxidav.urls import files_home_href


@dataclass(frozen=True)
class RemovalReport:
    """What removing one user dropped."""

    user_id: int
    nodes: int
    upload_sessions: int


def remove_user(db: Database, chain: BlobChain, username: str) -> RemovalReport:
    """Delete ``username`` and release every content reference they hold (one transaction).

    Raises ``AccountError`` for an unknown user. The user row is locked first, so nothing
    new can be created for the user while their references are released.
    """
    with db.write() as session:
        user_id = session.scalar(select(User.id).where(User.username == username).with_for_update())
        if user_id is None:
            raise AccountError(f"no user {username!r}")
        nodes = release_user_content(session, chain, user_id)
        uploads = release_user_uploads(session, chain, user_id)
        # Locks are keyed by URL, which carries the user name: a later user of the same name
        # must not inherit them.
        delete_locks(session, files_home_href(username), recursive=True)
        session.execute(delete(User).where(User.id == user_id))
    return RemovalReport(int(user_id), nodes, uploads)
