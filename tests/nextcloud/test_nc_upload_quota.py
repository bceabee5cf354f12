"""Chunked uploads count against the uploader's quota from the first chunk (issue 25 item 7):
507 with RFC 4331's quota-not-exceeded at the chunk that crosses, before its body is read when
its length is declared, and when it is recorded otherwise; ``OC-Total-Length`` checked up front;
the final MOVE not charged twice; the chunks readable by the uploader only."""

from __future__ import annotations

import base64
import http.client
from collections.abc import Iterator

from sqlalchemy import func, select, update

from oxidav.db.models.nextcloud import UploadChunk
from oxidav.db.models.users import User
from tests.support.live import LiveServer
from tests.support.nextcloud import used, user_id

UP = "/remote.php/dav/uploads/alice"
FILES = "/remote.php/dav/files/alice"
QUOTA = 100_000
CHUNK = 40_000


def _set_quota(live: LiveServer, name: str, quota: int) -> None:
    assert live.services is not None
    with live.services.db.write() as session:
        session.execute(update(User).where(User.username == name).values(quota_bytes=quota))


def _chunk_rows(live: LiveServer) -> int:
    assert live.services is not None
    with live.services.db.read() as session:
        return int(session.scalar(select(func.count()).select_from(UploadChunk)) or 0)


def _put_without_length(live: LiveServer, path: str, data: bytes) -> int:
    """A PUT with ``Transfer-Encoding: chunked``: no length is known before the body is read."""
    token = base64.b64encode(f"alice:{live.users['alice']}".encode()).decode()

    def pieces() -> Iterator[bytes]:
        for start in range(0, len(data), 8192):
            yield data[start : start + 8192]

    conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=60)
    try:
        conn.request(
            "PUT",
            path,
            body=pieces(),
            headers={"Authorization": f"Basic {token}"},
            encode_chunked=True,
        )
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


def test_chunks_are_charged_from_the_first_chunk(live_server: LiveServer) -> None:
    """A user with a 100 kB quota cannot park 3 MB in chunks: 507 at the chunk that crosses."""
    _set_quota(live_server, "alice", QUOTA)
    assert live_server.request("MKCOL", f"{UP}/big").status == 201
    statuses = []
    for n in range(1, 76):  # 75 chunks of 40 kB: 3 MB
        resp = live_server.request("PUT", f"{UP}/big/{n:05d}", b"x" * CHUNK)
        statuses.append(resp.status)
        if resp.status == 507:
            assert "quota-not-exceeded" in resp.text
            break
    assert statuses == [201, 201, 507]
    assert _chunk_rows(live_server) == 2
    # Replacing a chunk charges only the difference; a new one that no longer fits is refused.
    assert live_server.request("PUT", f"{UP}/big/00002", b"y" * (CHUNK + 1000)).status == 204
    assert live_server.request("PUT", f"{UP}/big/00003", b"z" * 30_000).status == 507
    # A second session shares the same room.
    assert live_server.request("MKCOL", f"{UP}/other").status == 201
    assert live_server.request("PUT", f"{UP}/other/1", b"w" * 19_000).status == 201
    assert live_server.request("PUT", f"{UP}/other/2", b"w" * 1_001).status == 507
    # The tree itself holds nothing yet (the chunks are not files).
    assert live_server.services is not None
    db = live_server.services.db
    assert used(db, user_id(db, "alice")) == 0


def test_a_chunk_of_unknown_length_is_refused_when_recorded(live_server: LiveServer) -> None:
    _set_quota(live_server, "alice", QUOTA)
    assert live_server.request("MKCOL", f"{UP}/s").status == 201
    assert _put_without_length(live_server, f"{UP}/s/1", b"a" * 60_000) == 201
    assert _put_without_length(live_server, f"{UP}/s/2", b"b" * 60_000) == 507
    assert _chunk_rows(live_server) == 1
    assert live_server.request("GET", f"{UP}/s/2").status == 404


def test_total_length_over_the_quota_is_refused_up_front(live_server: LiveServer) -> None:
    _set_quota(live_server, "alice", QUOTA)
    over = {"OC-Total-Length": str(3_000_000)}
    mkcol = live_server.request("MKCOL", f"{UP}/t1", headers=over)
    assert mkcol.status == 507 and "quota-not-exceeded" in mkcol.text
    # A session opened without the total: the first chunk carrying it is refused, unread.
    assert live_server.request("MKCOL", f"{UP}/t2").status == 201
    first = live_server.request("PUT", f"{UP}/t2/1", b"x" * 1000, headers=over)
    assert first.status == 507 and "quota-not-exceeded" in first.text
    assert _chunk_rows(live_server) == 0
    # Chunks held by other sessions count against the total too.
    assert live_server.request("PUT", f"{UP}/t2/1", b"x" * 60_000).status == 201
    fits = {"OC-Total-Length": str(50_000)}
    assert live_server.request("MKCOL", f"{UP}/t3", headers=fits).status == 507
    assert (
        live_server.request("MKCOL", f"{UP}/t4", headers={"OC-Total-Length": "40000"}).status == 201
    )


def test_the_final_move_is_not_charged_twice(live_server: LiveServer) -> None:
    _set_quota(live_server, "alice", QUOTA)
    assert (
        live_server.request("MKCOL", f"{UP}/m", headers={"OC-Total-Length": "90000"}).status == 201
    )
    for n in (1, 2):
        assert live_server.request("PUT", f"{UP}/m/{n}", b"q" * 45_000).status == 201
    done = live_server.request(
        "MOVE", f"{UP}/m/.file", headers={"Destination": f"{FILES}/whole.bin"}
    )
    assert done.status == 201, done.text
    assert live_server.services is not None
    db = live_server.services.db
    assert used(db, user_id(db, "alice")) == 90_000
    assert _chunk_rows(live_server) == 0
    # The room left is the quota less the file: 10 kB.
    assert live_server.request("MKCOL", f"{UP}/n").status == 201
    assert live_server.request("PUT", f"{UP}/n/1", b"r" * 10_000).status == 201
    assert live_server.request("PUT", f"{UP}/n/2", b"r" * 1).status == 507


def test_chunks_are_the_uploaders_only(live_server: LiveServer) -> None:
    assert live_server.request("MKCOL", f"{UP}/mine").status == 201
    assert live_server.request("PUT", f"{UP}/mine/1", b"secret").status == 201
    assert live_server.request("GET", f"{UP}/mine/1").body == b"secret"
    for method in ("GET", "PROPFIND", "DELETE"):
        resp = live_server.request(method, f"{UP}/mine/1", user="bob")
        assert resp.status == 404, (method, resp.status)
    assert live_server.request("PUT", f"{UP}/mine/2", b"intruder", user="bob").status == 404
