"""PUT's lock checks: one lock query per PUT (a new member's parent, whose depth-0 lock conflicts,
checked in the same query), and concurrent small PUTs of one user all landing (the SQLite writer
queue)."""

from __future__ import annotations

import threading

from files_helpers import url
from sqlalchemy import event

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
    assert live_server.services is not None
    engine = live_server.services.db.engine
    seen: list[str] = []

    def count(conn, cursor, statement, *args):  # type: ignore[no-untyped-def]
        if "dav_locks" in statement:
            seen.append(statement)

    event.listen(engine, "before_cursor_execute", count)
    try:
        status = live_server.request(method, url(path), body).status
    finally:
        event.remove(engine, "before_cursor_execute", count)
    return status, len(seen)


def test_an_overwrite_checks_the_locks_once(live_server: LiveServer) -> None:
    assert live_server.request("PUT", url("/o.txt"), b"one").status == 201
    assert _lock_queries(live_server, "PUT", "/o.txt", b"two") == (204, 1)
    # A new member also checks its parent's own locks (a depth-0 lock on the folder), in the
    # same query: the parent is one of the target's ancestors.
    assert _lock_queries(live_server, "PUT", "/n.txt", b"new") == (201, 1)


def test_locked_targets_and_parents_refuse_a_put_without_the_token(
    live_server: LiveServer,
) -> None:
    assert live_server.request("PUT", url("/f.txt"), b"old").status == 201
    token = _lock(live_server, "/f.txt")
    assert live_server.request("PUT", url("/f.txt"), b"no token").status == 423
    assert live_server.request("GET", url("/f.txt")).body == b"old"
    ok = live_server.request("PUT", url("/f.txt"), b"new", headers={"If": f"({token})"})
    assert ok.status == 204
    assert live_server.request("MKCOL", url("/d")).status == 201
    folder_token = _lock(live_server, "/d/", depth="0")
    assert live_server.request("PUT", url("/d/m.txt"), b"member").status == 423
    assert live_server.request("GET", url("/d/m.txt")).status == 404
    made = live_server.request(
        "PUT", url("/d/m.txt"), b"member", headers={"If": f"({folder_token})"}
    )
    assert made.status == 201


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
