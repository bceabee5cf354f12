"""Helpers of the grant tests: users, alice's tree, a movable clock."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import insert

from oxidav.authz.authn.principal import Principal
from oxidav.authz.grants.engine import GrantEngine
from oxidav.authz.grants.resources import Resource
from oxidav.db import Database, Transaction, utcnow
from oxidav.db.models.users import User
from oxidav.tree import NodeInfo, ensure_root, make_folder, resolve, write_file

_serial = itertools.count()

#: alice's tree: folders end with "/" here only to tell them apart.
TREE = (
    "/A/",
    "/A/S/",
    "/A/S/f.txt",
    "/A/S/g.txt",
    "/A/S/sub/",
    "/A/S/sub/h.txt",
    "/A/T/",
    "/A/T/x.txt",
)


class NoRefs:
    """The tree's ContentRefs for empty files (no manifests are ever referenced)."""

    def incref(self, session: Transaction, manifest_hash: str, n: int = 1) -> None:
        raise AssertionError("no content in these tests")

    def decref(self, session: Transaction, manifest_hash: str, n: int = 1) -> None:
        raise AssertionError("no content in these tests")


def add_user(db: Database, name: str) -> Principal:
    username = f"{name}{next(_serial)}"
    with db.write() as session:
        user_id = session.execute(
            insert(User).values(username=username, password_hash="x").returning(User.id)
        ).scalar_one()
    ensure_root(db, int(user_id))
    return Principal(int(user_id), username)


def build_tree(db: Database, user_id: int, entries: tuple[str, ...]) -> None:
    with db.write() as session:
        for entry in entries:
            if entry.endswith("/"):
                make_folder(session, user_id, entry.rstrip("/"))
            else:
                write_file(session, NoRefs(), user_id, entry, None)


@dataclass
class Clock:
    """The engine's idea of "now", movable by tests (expiry without sleeping)."""

    offset: timedelta = field(default_factory=timedelta)

    def __call__(self) -> datetime:
        return utcnow() + self.offset


@dataclass
class World:
    db: Database
    alice: Principal
    bob: Principal
    carol: Principal
    clock: Clock

    def node(self, path: str, owner: Principal | None = None) -> NodeInfo:
        with self.db.read() as session:
            found = resolve(session, (owner or self.alice).user_id, path)
        assert found is not None, path
        return found

    def res(self, path: str, owner: Principal | None = None) -> Resource:
        return Resource.node(self.node(path, owner))

    def engine(self, **options: Any) -> GrantEngine:
        return GrantEngine(self.db, now=self.clock, **options)


def make_world(db: Database) -> World:
    alice, bob, carol = (add_user(db, n) for n in ("alice", "bob", "carol"))
    build_tree(db, alice.user_id, TREE)
    return World(db, alice, bob, carol, Clock())
