"""Restoring a trash root to its original place, and releasing a removed user's content
(SQLite + PostgreSQL)."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from oxidav.db import Database
from oxidav.db.models.tree import Node
from oxidav.tree import (
    Conflict,
    NotFound,
    PreconditionFailed,
    QuotaExceeded,
    make_folder,
    release_user_content,
    resolve,
    restore,
    trash_node,
    write_file,
)
from oxidav.tree.props import get_props, set_props
from oxidav.tree.quota import used_bytes
from oxidav.tree.trash import list_trash
from tests.support.tree import add_user, content


def _etag(db: Database, user: int, path: str) -> str:
    with db.read() as s:
        node = resolve(s, user, path)
    assert node is not None
    return node.etag


def test_restore_puts_the_subtree_back(database, user, refs):
    with database.write() as s:
        make_folder(s, user, "/a")
        make_folder(s, user, "/a/d")
        make_folder(s, user, "/a/d/sub")
        f = write_file(s, refs, user, "/a/d/sub/f", content("f", 3)).node
        write_file(s, refs, user, "/a/d/g", content("g", 4))
        set_props(s, f.id, [("{urn:x}p", b"v")])
    with database.write() as s:
        trash_node(s, user, "/a/d/g")  # trashed on its own first: stays in the trash
        d = trash_node(s, user, "/a/d")
    before = [_etag(database, user, p) for p in ("", "/a")]
    with database.write() as s:
        restored = restore(s, user, d.id)
    assert restored.id == d.id and restored.path == "/a/d" and restored.size == 3
    with database.read() as s:
        back = resolve(s, user, "/a/d/sub/f")
        assert back is not None and back.id == f.id
        assert get_props(s, [f.id]) == {f.id: {"{urn:x}p": b"v"}}
        assert resolve(s, user, "/a/d/g") is None
        assert [p for _, p, _ in list_trash(s, user)] == ["/a/d/g"]
        assert used_bytes(s, user) == 3
        assert resolve(s, user, "/a").size == 3  # type: ignore[union-attr]
    after = [_etag(database, user, p) for p in ("", "/a")]
    assert all(b != a for b, a in zip(before, after, strict=True))
    # The trash still references its content; restoring moves no reference.
    assert refs.live() == {"m-f": 1, "m-g": 1}


def test_restore_errors(database, user, refs):
    with database.write() as s:
        make_folder(s, user, "/d")
        write_file(s, refs, user, "/f", content("f", 1))
        write_file(s, refs, user, "/d/x", content("x", 1))
    with database.write() as s:
        f = trash_node(s, user, "/f")
        x = trash_node(s, user, "/d/x")
        write_file(s, refs, user, "/f", content("f2", 2))  # the original place is taken
        trash_node(s, user, "/d")  # the original folder is gone
    with pytest.raises(PreconditionFailed) as taken, database.write() as s:
        restore(s, user, f.id)
    assert taken.value.status == 412
    with pytest.raises(Conflict) as gone, database.write() as s:
        restore(s, user, x.id)
    assert gone.value.status == 409
    live = _live_id(database, user, "/f")
    other = add_user(database)
    for user_id, node_id in ((user, live), (user, 10**9), (other, f.id)):
        with pytest.raises(NotFound), database.write() as s:
            restore(s, user_id, node_id)
    with database.read() as s:
        assert len(list_trash(s, user)) == 3


def _live_id(db: Database, user: int, path: str) -> int:
    with db.read() as s:
        node = resolve(s, user, path)
    assert node is not None
    return node.id


def test_restore_counts_against_the_quota(database, refs):
    user = add_user(database, quota=10)
    with database.write() as s:
        write_file(s, refs, user, "/old", content("old", 8))
    with database.write() as s:
        old = trash_node(s, user, "/old")
        write_file(s, refs, user, "/new", content("new", 8))
    with pytest.raises(QuotaExceeded), database.write() as s:
        restore(s, user, old.id)
    with database.read() as s:
        assert resolve(s, user, "/old") is None
        assert used_bytes(s, user) == 8
    other = add_user(database)
    with database.write() as s:
        write_file(s, refs, other, "/a", content("a", 8))
        a = trash_node(s, other, "/a")
        write_file(s, refs, other, "/b", content("b", 8))
    with pytest.raises(QuotaExceeded), database.write() as s:
        restore(s, other, a.id, default_quota_bytes=10)


def test_release_user_content_drops_every_reference(database, refs):
    alice, bob = add_user(database), add_user(database)
    with database.write() as s:
        make_folder(s, alice, "/d")
        write_file(s, refs, alice, "/d/a", content("shared", 5))
        write_file(s, refs, alice, "/d/b", content("shared", 5))
        write_file(s, refs, alice, "/t", content("trashed", 2))
        write_file(s, refs, bob, "/b", content("shared", 5))
    with database.write() as s:
        trash_node(s, alice, "/t")
    assert refs.live() == {"m-shared": 3, "m-trashed": 1}
    with database.write() as s:
        assert release_user_content(s, refs, alice) == 5  # root, /d, /d/a, /d/b, /t
    assert refs.live() == {"m-shared": 1}
    with database.read() as s:
        count = select(func.count()).select_from(Node)
        assert s.scalar(count.where(Node.user_id == alice)) == 0
        assert s.scalar(count.where(Node.user_id == bob)) == 2
