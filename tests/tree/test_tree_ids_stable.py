"""Node ids are Nextcloud fileids: never reused, even after the newest node is purged."""

from __future__ import annotations

from sqlalchemy import delete

from oxidav.authz.authn import accounts
from oxidav.db import Database
from oxidav.db.models.tree import Node
from oxidav.tree import ensure_root, make_folder


def test_purged_node_id_is_not_reused(database: Database) -> None:
    user_id = accounts.create_user(database, "alice", "secret")
    ensure_root(database, user_id)
    with database.write() as session:
        first_id = make_folder(session, user_id, "/a").id
    with database.write() as session:
        session.execute(delete(Node).where(Node.id == first_id))
    with database.write() as session:
        assert make_folder(session, user_id, "/b").id > first_id
