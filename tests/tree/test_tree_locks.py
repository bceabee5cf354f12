"""Lock rows: create, look up, list by root and below, refresh, expire, delete."""

from __future__ import annotations

import time

from sqlalchemy import update

from oxidav.db.models.tree import DavLock
from oxidav.tree.locks import (
    create_lock,
    delete_lock,
    delete_locks,
    get_lock,
    list_locks,
    read_locks,
    refresh_lock,
)


def _lock(scope="exclusive", depth="0", timeout=60.0):
    return {
        "type": "write",
        "scope": scope,
        "depth": depth,
        "owner": b"<owner xmlns='DAV:'>me</owner>",
        "timeout": timeout,
        "principal": "alice",
    }


def test_lock_rows(database):
    with database.write() as s:
        a = create_lock(s, "/f/alice/a/", _lock())
        b = create_lock(s, "/f/alice/a/b", _lock(scope="shared"))
        c = create_lock(s, "/f/alice/ab", _lock())
    assert a["root"] == "/f/alice/a"
    assert a["token"].startswith("opaquelocktoken:")
    assert a["expire"] > time.time()
    with database.read() as s:
        assert get_lock(s, a["token"])["owner"] == b"<owner xmlns='DAV:'>me</owner>"  # type: ignore[index]
        assert [
            x["token"]
            for x in list_locks(s, "/f/alice/a", include_root=True, include_children=False)
        ] == [a["token"]]
        assert [
            x["token"]
            for x in list_locks(s, "/f/alice/a", include_root=False, include_children=True)
        ] == [b["token"]]
        assert {
            x["token"] for x in list_locks(s, "/", include_root=True, include_children=True)
        } == {a["token"], b["token"], c["token"]}
    with database.write() as s:
        refreshed = refresh_lock(s, a["token"], 3600)
        assert refreshed is not None and refreshed["timeout"] == 3600
        # Expire b in the past: it disappears from every read.
        s.execute(update(DavLock).where(DavLock.token == b["token"]).values(expire=time.time() - 1))
    with database.read() as s:
        assert get_lock(s, b["token"]) is None
        assert list_locks(s, "/f/alice/a", include_root=False, include_children=True) == []
    with database.write() as s:
        assert delete_lock(s, c["token"])
        assert not delete_lock(s, c["token"])
        assert delete_locks(s, "/f/alice/a") == 2
    with database.read() as s:
        assert list_locks(s, "/", include_root=True, include_children=True) == []


def test_read_locks_is_list_locks(database):
    """``read_locks`` (one prepared read, a PROPFIND's) gives what ``list_locks`` gives: the
    root's locks and / or those below it (not a sibling sharing the prefix), none expired,
    oldest first; for ``/`` every lock; neither asked: none."""
    with database.write() as s:
        for root in ("/f/alice/a", "/f/alice/a/b/", "/f/alice/a/b/c", "/f/alice/ab", "/f/bob"):
            create_lock(s, root, _lock())
        gone = create_lock(s, "/f/alice/a/old", _lock())
        s.execute(
            update(DavLock).where(DavLock.token == gone["token"]).values(expire=time.time() - 1)
        )
    for root in ("/f/alice/a/", "/f/alice/a/b", "/f/alice", "/", "/nothing"):
        for flags in (
            {"include_root": r, "include_children": c} for r in (False, True) for c in (False, True)
        ):
            with database.read() as s:
                listed = list_locks(s, root, **flags)
            assert read_locks(database, root, **flags) == listed
    assert len(read_locks(database, "/", include_root=True, include_children=True)) == 5
    assert len(read_locks(database, "/f/alice/a", include_root=True, include_children=True)) == 3
    assert len(read_locks(database, "/f/alice/a", include_root=False, include_children=True)) == 2
