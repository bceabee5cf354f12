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
