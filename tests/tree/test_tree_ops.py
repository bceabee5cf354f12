"""Tree operations on SQLite and PostgreSQL: create, write, list, roll-up, quota, move, copy,
trash and purge."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select

from oxidav.db import Database, utcnow
from oxidav.db.models.tree import Node
from oxidav.tree import (
    AlreadyExists,
    Conflict,
    Forbidden,
    IsAFolder,
    ListedRow,
    NotFound,
    PreconditionFailed,
    QuotaExceeded,
    copy_node,
    count_subtree,
    list_children,
    list_subtree,
    make_folder,
    move_node,
    purge_trashed_before,
    read_children,
    read_children_brief,
    read_listed_rows,
    resolve,
    trash_node,
    write_file,
)
from oxidav.tree.props import get_props, set_props
from oxidav.tree.quota import available_bytes, used_bytes
from tests.support.tree import add_user, content


def _etags(db: Database, user: int, *paths: str) -> list[str]:
    with db.read() as s:
        nodes = [resolve(s, user, p) for p in paths]
    return [n.etag if n else "" for n in nodes]


def _sizes(db: Database, user: int, *paths: str) -> list[int]:
    with db.read() as s:
        return [resolve(s, user, p).size for p in paths]  # type: ignore[union-attr]


def test_mkdir_write_and_list(database, user, refs):
    with database.write() as s:
        make_folder(s, user, "/docs")
        make_folder(s, user, "/docs/sub")
        r1 = write_file(s, refs, user, "/docs/a.txt", content("a", 10))
        r2 = write_file(s, refs, user, "/docs/b.pdf", content("b", 20))
    assert r1.created and r2.created
    assert r1.node.mime_type == "text/plain"
    assert r2.node.mime_type == "application/pdf"
    with database.read() as s:
        docs = resolve(s, user, "/docs")
        assert docs is not None and docs.is_folder
        names = [n.name for n in list_children(s, docs.id)]
        assert names == ["a.txt", "b.pdf", "sub"]
        page1 = list_children(s, docs.id, limit=2)
        page2 = list_children(s, docs.id, after=page1[-1].name, limit=2)
        assert [n.name for n in page1 + page2] == names
    # The prepared page read outside a session (a folder listing's) returns the same rows.
    assert read_children(database, docs.id, after=None, limit=2) == page1
    assert read_children(database, docs.id, after=page1[-1].name, limit=2) == page2
    with database.read() as s:
        assert count_subtree(s, user, "") == 4
        assert [n.path for n in list_subtree(s, user, "")] == [
            "/docs",
            "/docs/a.txt",
            "/docs/b.pdf",
            "/docs/sub",
        ]
    assert refs.live() == {"m-a": 1, "m-b": 1}
    assert _sizes(database, user, "", "/docs", "/docs/sub") == [30, 30, 0]


def _listed_tree(database, user, refs) -> list[str]:
    """A tree with nested folders, a non-ASCII name and a folder a move renamed; its folders."""
    with database.write() as s:
        make_folder(s, user, "/docs")
        make_folder(s, user, "/docs/sub")
        make_folder(s, user, "/old")
        write_file(s, refs, user, "/top.txt", content("t", 3))
        write_file(s, refs, user, "/docs/a.txt", content("a", 10))
        write_file(s, refs, user, "/docs/sub/Ünïcødé ✓.md", content("u", 5))
        write_file(s, refs, user, "/old/inner.bin", content("i", 7))
        move_node(s, user, "/old", "/docs/sub/new name")
    return ["", "/docs", "/docs/sub", "/docs/sub/new name"]


def _folder(database, user, path):
    with database.read() as s:
        folder = resolve(s, user, path)
    assert folder is not None
    return folder


def test_a_brief_listing_reads_the_same_nodes_but_their_creation_time(database, user, refs):
    """``read_children_brief`` (a listing without creation dates) gives each page's nodes as
    ``read_children`` does, user, parent and path taken from the folder, ``created_at`` None:
    in the root, in nested folders, under a non-ASCII name and after a move renamed a folder."""
    for path in _listed_tree(database, user, refs):
        folder = _folder(database, user, path)
        full = read_children(database, folder.id, after=None, limit=1000)
        assert full
        brief = read_children_brief(database, folder, after=None, limit=1000)
        assert brief == [node._replace(created_at=None) for node in full]
        first = read_children_brief(database, folder, after=None, limit=1)
        rest = read_children_brief(database, folder, after=first[-1].name, limit=1000)
        assert first + rest == brief


def test_listed_rows_are_the_nodes_columns_a_file_browser_shows(database, user, refs):
    """``read_listed_rows`` gives each child's ``ListedRow`` fields as ``read_children`` has
    them, in the same order and pages, in the same folders as the brief listing's test."""
    for path in _listed_tree(database, user, refs):
        folder = _folder(database, user, path)
        full = read_children(database, folder.id, after=None, limit=1000)
        assert full
        listed = read_listed_rows(database, folder.id, after=None, limit=1000)
        assert listed == [
            ListedRow(n.id, n.name, n.is_folder, n.size, n.mtime, n.etag, n.mime_type) for n in full
        ]
        first = read_listed_rows(database, folder.id, after=None, limit=1)
        rest = read_listed_rows(database, folder.id, after=first[-1].name, limit=1000)
        assert first + rest == listed


def test_mkdir_errors(database, user, refs):
    with database.write() as s:
        make_folder(s, user, "/a")
        write_file(s, refs, user, "/f", content("f", 1))
    with pytest.raises(AlreadyExists), database.write() as s:
        make_folder(s, user, "/a")
    with pytest.raises(Conflict), database.write() as s:
        make_folder(s, user, "/missing/x")
    with pytest.raises(Conflict), database.write() as s:
        make_folder(s, user, "/f/x")
    with pytest.raises(IsAFolder), database.write() as s:
        write_file(s, refs, user, "/a", content("x", 1))


def test_overwrite_swaps_references_and_rolls_up_etags(database, user, refs):
    with database.write() as s:
        make_folder(s, user, "/a")
        make_folder(s, user, "/a/b")
        make_folder(s, user, "/other")
        write_file(s, refs, user, "/a/b/f", content("v1", 100))
    before = _etags(database, user, "", "/a", "/a/b", "/a/b/f", "/other")
    with database.write() as s:
        result = write_file(s, refs, user, "/a/b/f", content("v2", 40))
    assert not result.created
    after = _etags(database, user, "", "/a", "/a/b", "/a/b/f", "/other")
    assert [x != y for x, y in zip(before, after, strict=True)] == [True, True, True, True, False]
    assert refs.live() == {"m-v2": 1}
    assert _sizes(database, user, "", "/a", "/a/b", "/other") == [40, 40, 40, 0]
    # Rewriting the same content keeps one reference.
    with database.write() as s:
        write_file(s, refs, user, "/a/b/f", content("v2", 40))
    assert refs.live() == {"m-v2": 1}


def test_preconditions_are_checked_at_commit(database, user, refs):
    with database.write() as s:
        etag = write_file(s, refs, user, "/f", content("v1", 1)).node.etag
    with pytest.raises(PreconditionFailed), database.write() as s:
        write_file(s, refs, user, "/f", content("v2", 2), require_absent=True)
    with pytest.raises(PreconditionFailed), database.write() as s:
        write_file(s, refs, user, "/f", content("v2", 2), require_etag="nope")
    with pytest.raises(PreconditionFailed), database.write() as s:
        write_file(s, refs, user, "/new", content("v2", 2), require_etag=etag)
    with database.write() as s:
        write_file(s, refs, user, "/f", content("v2", 2), require_etag=etag)
    # A failed precondition rolled back its incref with the transaction (the counter is not
    # transactional, so only the successful writes count here).
    with database.read() as s:
        assert resolve(s, user, "/f").manifest_hash == "m-v2"  # type: ignore[union-attr]
        assert resolve(s, user, "/new") is None


def test_quota(database, refs):
    user = add_user(database, quota=100)
    with database.write() as s:
        write_file(s, refs, user, "/a", content("a", 60))
    with pytest.raises(QuotaExceeded), database.write() as s:
        write_file(s, refs, user, "/b", content("b", 50))
    with database.read() as s:
        assert resolve(s, user, "/b") is None
        assert used_bytes(s, user) == 60
        assert available_bytes(s, user) == 40
    # Replacing a file counts only the growth.
    with database.write() as s:
        write_file(s, refs, user, "/a", content("a2", 100))
    with pytest.raises(QuotaExceeded), database.write() as s:
        copy_node(s, refs, user, "/a", "/c")
    # Default quota applies to users without their own.
    other = add_user(database)
    with database.read() as s:
        assert available_bytes(s, other) is None
        assert available_bytes(s, other, default_quota_bytes=5) == 5


def test_move_folder_rewrites_subtree_and_keeps_ids_and_props(database, user, refs):
    with database.write() as s:
        make_folder(s, user, "/src")
        make_folder(s, user, "/src/deep")
        f = write_file(s, refs, user, "/src/deep/f", content("f", 7)).node
        make_folder(s, user, "/dst")
        set_props(s, f.id, [("{urn:x}color", b"<x:color xmlns:x='urn:x'>red</x:color>")])
        make_folder(s, user, "/srcx")  # a sibling sharing the name prefix
        write_file(s, refs, user, "/srcx/g", content("g", 1))
    with database.write() as s:
        result = move_node(s, user, "/src", "/dst/moved")
    assert result.created
    with database.read() as s:
        assert resolve(s, user, "/src") is None
        moved = resolve(s, user, "/dst/moved/deep/f")
        assert moved is not None and moved.id == f.id
        assert get_props(s, [f.id]) == {
            f.id: {"{urn:x}color": b"<x:color xmlns:x='urn:x'>red</x:color>"}
        }
        assert resolve(s, user, "/srcx/g") is not None
    assert _sizes(database, user, "", "/dst", "/dst/moved", "/srcx") == [8, 7, 7, 1]
    assert refs.live() == {"m-f": 1, "m-g": 1}


def test_move_errors_and_overwrite(database, user, refs):
    with database.write() as s:
        make_folder(s, user, "/a")
        make_folder(s, user, "/a/b")
        write_file(s, refs, user, "/x", content("x", 1))
        write_file(s, refs, user, "/y", content("y", 2))
    with pytest.raises(Forbidden), database.write() as s:
        move_node(s, user, "/a", "/a/b/c")
    with pytest.raises(Forbidden), database.write() as s:
        move_node(s, user, "/a/b", "/a")
    with pytest.raises(NotFound), database.write() as s:
        move_node(s, user, "/nope", "/z")
    with pytest.raises(Conflict), database.write() as s:
        move_node(s, user, "/x", "/missing/x")
    with pytest.raises(PreconditionFailed), database.write() as s:
        move_node(s, user, "/x", "/y", overwrite=False)
    with database.write() as s:
        result = move_node(s, user, "/x", "/y")
    assert not result.created
    with database.read() as s:
        assert resolve(s, user, "/y").manifest_hash == "m-x"  # type: ignore[union-attr]
        assert resolve(s, user, "/x") is None
    assert _sizes(database, user, "")[0] == 1


def test_copy_shares_content_and_copies_props(database, user, refs):
    with database.write() as s:
        make_folder(s, user, "/src")
        f = write_file(s, refs, user, "/src/f", content("f", 5)).node
        write_file(s, refs, user, "/src/g", content("f", 5))  # same content twice
        make_folder(s, user, "/src/sub")
        set_props(s, f.id, [("{urn:x}p", b"<p xmlns='urn:x'/>")])
    with database.write() as s:
        result = copy_node(s, refs, user, "/src", "/copy")
    assert result.created
    with database.read() as s:
        copied = resolve(s, user, "/copy/f")
        assert copied is not None and copied.id != f.id
        assert copied.manifest_hash == "m-f"
        assert get_props(s, [copied.id]) == {copied.id: {"{urn:x}p": b"<p xmlns='urn:x'/>"}}
        assert resolve(s, user, "/copy/sub") is not None
    assert refs.live() == {"m-f": 4}
    assert _sizes(database, user, "", "/src", "/copy") == [20, 10, 10]
    with database.write() as s:
        copy_node(s, refs, user, "/src", "/shallow", depth_infinity=False)
    with database.read() as s:
        shallow = resolve(s, user, "/shallow")
        assert shallow is not None and list_children(s, shallow.id) == []
        assert shallow.size == 0


def test_trash_and_purge(database, user, refs):
    with database.write() as s:
        make_folder(s, user, "/d")
        write_file(s, refs, user, "/d/f", content("f", 3))
        write_file(s, refs, user, "/d/g", content("g", 4))
    with database.write() as s:
        trash_node(s, user, "/d/g")  # trashed on its own first
        trash_node(s, user, "/d")
    with database.read() as s:
        assert resolve(s, user, "/d") is None
        assert resolve(s, user, "/d/f") is None
        assert used_bytes(s, user) == 0
    # A new node may take the trashed name.
    with database.write() as s:
        make_folder(s, user, "/d")
    assert refs.live() == {"m-f": 1, "m-g": 1}
    assert purge_trashed_before(database, refs, utcnow() - timedelta(days=1)) == 0
    assert purge_trashed_before(database, refs, utcnow() + timedelta(seconds=1)) == 2
    assert refs.live() == {}
    with database.read() as s:
        rows = s.execute(select(Node.path).where(Node.user_id == user)).scalars().all()
    assert sorted(rows) == ["", "/d"]
    with pytest.raises(Forbidden), database.write() as s:
        trash_node(s, user, "")


def test_users_do_not_see_each_other(database, refs):
    alice, bob = add_user(database), add_user(database)
    with database.write() as s:
        write_file(s, refs, alice, "/f", content("f", 1))
    with database.read() as s:
        assert resolve(s, bob, "/f") is None
        assert resolve(s, alice, "/f") is not None
