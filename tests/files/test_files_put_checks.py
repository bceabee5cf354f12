"""PUT's checks: one lock query per PUT (a new member's parent, whose depth-0 lock conflicts,
checked in the same query; a prepared read equal to the session's), the same answers whether
the body is small enough to be read before the checks (``ONE_TRANSACTION_MAX``) or not,
concurrent small PUTs of one user all landing (the SQLite writer queue), the manifest committed
with the node row, and bodiless 201/204 answers."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from sqlalchemy import event, select, update

from oxidav.blobs.fsck import check
from oxidav.blobs.gc import collect_garbage
from oxidav.db import Database
from oxidav.db.models.blobs import BlobChunk, BlobManifest
from oxidav.db.models.tree import DavLock
from oxidav.db.models.users import User
from oxidav.db.prepared import PreparedRead
from oxidav.providers.files.locks import DbLockStorage
from oxidav.providers.files.put import ONE_TRANSACTION_MAX
from oxidav.tree import locks as lock_rows
from tests.support.files import url
from tests.support.live import LiveServer

LOCKINFO = (
    b'<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/>'
    b"</D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>"
)


def _lock(live_server: LiveServer, path: str, depth: str = "0") -> str:
    response = live_server.request("LOCK", url(path), LOCKINFO, headers={"Depth": depth})
    assert response.status in (200, 201), response.status
    return str(response.headers["lock-token"])


def _lock_queries(live_server: LiveServer, method: str, path: str, body: bytes) -> tuple[int, int]:
    """The status of the request, and how many lock queries it ran: through a session, or as
    a ``PreparedRead`` on a driver connection (which SQLAlchemy's events do not see)."""
    assert live_server.services is not None
    engine = live_server.services.db.engine
    seen: list[str] = []

    def count(conn, cursor, statement, *args):  # type: ignore[no-untyped-def]
        if "dav_locks" in statement:
            seen.append(statement)

    prepared_rows = PreparedRead.rows

    def counted_rows(read: PreparedRead, db: Database, params: Any) -> list[tuple[Any, ...]]:
        if "dav_locks" in str(read.statement):
            seen.append(str(read.statement))
        return prepared_rows(read, db, params)

    event.listen(engine, "before_cursor_execute", count)
    PreparedRead.rows = counted_rows  # type: ignore[method-assign]
    try:
        status = live_server.request(method, url(path), body).status
    finally:
        PreparedRead.rows = prepared_rows  # type: ignore[method-assign]
        event.remove(engine, "before_cursor_execute", count)
    return status, len(seen)


def test_the_prepared_lock_read_returns_what_the_session_returns(database: Database) -> None:
    storage = DbLockStorage(database)
    shared = {"type": "write", "scope": "shared", "depth": "infinity", "owner": b"<o>a</o>"}
    storage.create("/a", {**shared, "timeout": 60, "principal": "alice"})
    storage.create("/a/b", {**shared, "timeout": -1, "principal": "bob"})
    storage.create("/a/b/c", {**shared, "depth": "0", "timeout": 600, "principal": "alice"})
    for roots in (["/a/b/c", "/a/b", "/a", "/"], ["/a/b"], ["/x", "/"]):
        with database.read() as session:
            expected = lock_rows.list_locks_at(session, roots)
        assert storage.locks_at(roots) == expected
    assert len(storage.locks_at(["/a/b/c", "/a/b", "/a", "/"])) == 3


def test_an_overwrite_checks_the_locks_once(live_server: LiveServer) -> None:
    assert live_server.request("PUT", url("/o.txt"), b"one").status == 201
    assert _lock_queries(live_server, "PUT", "/o.txt", b"two") == (204, 1)
    # A new member also checks its parent's own locks (a depth-0 lock on the folder), in the
    # same query: the parent is one of the target's ancestors.
    assert _lock_queries(live_server, "PUT", "/n.txt", b"new") == (201, 1)


#: Body sizes on both sides of ``ONE_TRANSACTION_MAX``: read before the checks (which then run
#: in the write's transaction) or checked first.
BODY_SIZES = pytest.mark.parametrize(
    "size", [3, ONE_TRANSACTION_MAX, ONE_TRANSACTION_MAX + 1], ids=["tiny", "max", "over"]
)


def _body(size: int, fill: bytes) -> bytes:
    return (fill * size)[:size]


@BODY_SIZES
def test_locked_targets_and_parents_refuse_a_put_without_the_token(
    live_server: LiveServer, size: int
) -> None:
    old, new, member = _body(size, b"old"), _body(size, b"new"), _body(size, b"member")
    assert live_server.request("PUT", url("/f.txt"), old).status == 201
    token = _lock(live_server, "/f.txt")
    assert live_server.request("PUT", url("/f.txt"), _body(size, b"no token")).status == 423
    assert live_server.request("GET", url("/f.txt")).body == old
    other = live_server.request("PUT", url("/f.txt"), new, headers={"If": "(<urn:uuid:nope>)"})
    assert other.status in (412, 423)
    ok = live_server.request("PUT", url("/f.txt"), new, headers={"If": f"({token})"})
    assert ok.status == 204
    assert live_server.request("GET", url("/f.txt")).body == new
    assert live_server.request("MKCOL", url("/d")).status == 201
    folder_token = _lock(live_server, "/d/", depth="0")
    assert live_server.request("PUT", url("/d/m.txt"), member).status == 423
    assert live_server.request("GET", url("/d/m.txt")).status == 404
    made = live_server.request("PUT", url("/d/m.txt"), member, headers={"If": f"({folder_token})"})
    assert made.status == 201
    assert live_server.request("MKCOL", url("/deep")).status == 201
    assert live_server.request("MKCOL", url("/deep/er")).status == 201
    _lock(live_server, "/deep/", depth="infinity")
    assert live_server.request("PUT", url("/deep/er/x.txt"), member).status == 423
    assert live_server.request("GET", url("/deep/er/x.txt")).status == 404


@BODY_SIZES
def test_an_expired_lock_does_not_refuse_a_put(live_server: LiveServer, size: int) -> None:
    """A lock refuses a PUT without its token (423) only while it lasts: once its ``expire``
    is in the past, the same PUT replaces the content (204)."""
    assert live_server.services is not None
    assert live_server.request("PUT", url("/x.txt"), _body(size, b"old")).status == 201
    _lock(live_server, "/x.txt")
    assert live_server.request("PUT", url("/x.txt"), _body(size, b"locked")).status == 423
    with live_server.services.db.write() as session:
        session.execute(update(DavLock).values(expire=1.0))
    assert live_server.request("PUT", url("/x.txt"), _body(size, b"new")).status == 204
    assert live_server.request("GET", url("/x.txt")).body == _body(size, b"new")


@BODY_SIZES
def test_put_checks_answer_the_same_for_every_body_size(live_server: LiveServer, size: int) -> None:
    body, other = _body(size, b"body"), _body(size, b"other")
    assert live_server.request("MKCOL", url("/folder")).status == 201
    assert live_server.request("PUT", url("/folder"), body).status == 405
    assert live_server.request("PUT", url("/missing/f.txt"), body).status == 409
    assert (
        live_server.request("PUT", url("/f.txt"), body, headers={"If-Match": '"x"'}).status == 412
    )
    assert live_server.request("GET", url("/f.txt")).status == 404
    created = live_server.request("PUT", url("/f.txt"), body, headers={"If-None-Match": "*"})
    assert created.status == 201
    etag = created.headers["etag"]
    refused = [
        {"If-None-Match": "*"},
        {"If-Match": '"not-the-etag"'},
        {"If-Unmodified-Since": "Sat, 01 Jan 2000 00:00:00 GMT"},
    ]
    for headers in refused:
        assert live_server.request("PUT", url("/f.txt"), other, headers=headers).status == 412
    assert live_server.request("GET", url("/f.txt")).body == body
    replaced = live_server.request("PUT", url("/f.txt"), other, headers={"If-Match": etag})
    assert replaced.status == 204
    got = live_server.request("GET", url("/f.txt"))
    assert (got.body, got.headers["etag"]) == (other, replaced.headers["etag"])


def test_concurrent_small_puts_all_land(live_server: LiveServer) -> None:
    clients, per_client = 8, 12
    statuses: list[int] = []

    def worker(c: int) -> None:
        for i in range(per_client):
            body = f"{c}-{i}".encode() * 300
            statuses.append(live_server.request("PUT", url(f"/c{c}-{i}.bin"), body).status)

    threads = [threading.Thread(target=worker, args=(c,)) for c in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [201] * (clients * per_client)
    for c in range(clients):
        for i in range(per_client):
            got = live_server.request("GET", url(f"/c{c}-{i}.bin"))
            assert got.body == f"{c}-{i}".encode() * 300


def test_one_small_content_written_and_replaced_concurrently_keeps_exact_counts(
    live_server: LiveServer,
) -> None:
    """Eight clients PUT the same small content (named by its one chunk), then overwrite half
    of their files with another: the two chunk rows count exactly the files that hold each
    content (SQLite's one writer, PostgreSQL's upsert and row locks), and fsck finds nothing
    wrong."""
    assert live_server.services is not None
    db, chain = live_server.services.db, live_server.services.blobs
    same, other = b"the same small file " * 100, b"another small file " * 100
    clients, per_client = 8, 6
    statuses: list[int] = []

    def worker(c: int) -> None:
        for i in range(per_client):
            statuses.append(live_server.request("PUT", url(f"/s{c}-{i}"), same).status)
        for i in range(0, per_client, 2):
            statuses.append(live_server.request("PUT", url(f"/s{c}-{i}"), other).status)

    threads = [threading.Thread(target=worker, args=(c,)) for c in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    half = clients * per_client // 2
    assert sorted(statuses) == [201] * (2 * half) + [204] * half
    with db.read() as session:
        assert session.execute(select(BlobManifest.hash)).all() == []
        counts = {
            row.hash: (row.refcount, row.content_refs)
            for row in session.execute(
                select(BlobChunk.hash, BlobChunk.refcount, BlobChunk.content_refs)
            )
        }
    assert sorted(counts.values()) == [(half, half), (half, half)]
    for c in range(clients):
        for i in range(per_client):
            body = live_server.request("GET", url(f"/s{c}-{i}")).body
            assert body == (other if i % 2 == 0 else same)
    assert check(db, chain.store, deep=True).clean


def test_a_put_refused_at_commit_leaves_no_content(live_server: LiveServer) -> None:
    """A small content is named by its one chunk, whose row — bytes and reference — is written
    in the node's transaction (``PendingContent``, ``oxidav.blobs.inline``): a PUT the quota
    refuses there leaves the previous version and no row of its own, in the database or the
    store. (A larger content leaves unreferenced chunk rows and blobs, which gc collects:
    ``tests/blobs/test_blob_gc_fsck.py``.)"""
    assert live_server.services is not None
    db, chain = live_server.services.db, live_server.services.blobs

    def rows() -> list[Any]:
        with db.read() as session:
            assert session.execute(select(BlobManifest.hash)).all() == []
            return session.execute(
                select(BlobChunk.hash, BlobChunk.refcount, BlobChunk.content_refs)
            ).all()

    with db.write() as session:
        session.execute(update(User).where(User.username == "alice").values(quota_bytes=100))
    assert live_server.request("PUT", url("/f.txt"), b"a" * 60).status == 201
    kept = rows()
    assert [(row.refcount, row.content_refs) for row in kept] == [(1, 1)]
    assert live_server.request("PUT", url("/f.txt"), b"b" * 101).status == 507
    assert live_server.request("PUT", url("/g.txt"), b"c" * 50).status == 507
    assert live_server.request("GET", url("/f.txt")).body == b"a" * 60
    assert rows() == kept
    assert list(chain.store.iter_keys()) == []
    collect_garbage(db, chain.store, grace_seconds=0)
    assert live_server.request("GET", url("/f.txt")).body == b"a" * 60
    assert check(db, chain.store, deep=True).clean


def test_created_and_replaced_answers_have_no_body(live_server: LiveServer) -> None:
    created = live_server.request("PUT", url("/e.txt"), b"one")
    assert (created.status, created.body, created.headers["content-length"]) == (201, b"", "0")
    assert created.headers["etag"].startswith('"') and "date" in created.headers
    replaced = live_server.request("PUT", url("/e.txt"), b"two")
    assert (replaced.status, replaced.body) == (204, b"")
    assert replaced.headers["etag"] != created.headers["etag"]
