"""Helpers of the tree tests: users, a reference-counting recorder, content facts."""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass

from sqlalchemy import insert

from oxidav.db import Database, Transaction
from oxidav.db.models.users import User
from oxidav.tree import ensure_root

_names = itertools.count()


@dataclass(frozen=True)
class Content:
    manifest_hash: str
    size: int
    content_hash: str


def content(tag: str, size: int) -> Content:
    return Content(manifest_hash=f"m-{tag}", size=size, content_hash=f"c-{tag}")


class CountingRefs:
    """Records the net references the tree takes on each manifest (the ContentRefs contract)."""

    def __init__(self) -> None:
        self.refs: Counter[str] = Counter()

    def incref(self, session: Transaction, manifest_hash: str, n: int = 1) -> None:
        self.refs[manifest_hash] += n

    def decref(self, session: Transaction, manifest_hash: str, n: int = 1) -> None:
        self.refs[manifest_hash] -= n
        assert self.refs[manifest_hash] >= 0, manifest_hash

    def live(self) -> dict[str, int]:
        return {k: v for k, v in self.refs.items() if v}


def add_user(db: Database, quota: int | None = None) -> int:
    with db.write() as session:
        user_id = session.execute(
            insert(User)
            .values(username=f"user{next(_names)}", password_hash="x", quota_bytes=quota)
            .returning(User.id)
        ).scalar_one()
    ensure_root(db, user_id)
    return int(user_id)
