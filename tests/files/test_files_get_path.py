"""The GET path's fast pieces (both backends): the node read on the raw driver connection
equals the session's, and conditional / range GETs stay right while chunk lists come from the
manifest cache (an overwritten file is never served from its old manifest)."""

from __future__ import annotations

import random

from sqlalchemy import bindparam, event
from wsgidav import util

from oxidav.blobs import BlobChain, LocalBlobStore
from oxidav.db import Database
from oxidav.db.models.tree import Node
from oxidav.db.prepared import PreparedRead
from oxidav.tree import make_folder, resolve, write_file
from oxidav.tree.nodes import ensure_root, select_live
from oxidav.tree.types import NodeInfo
from tests.support.files import url
from tests.support.live import LiveServer

_NODE_AT = PreparedRead(
    select_live().where(Node.user_id == bindparam("user_id"), Node.path == bindparam("path"))
)


def test_prepared_read_returns_what_the_session_returns(database: Database, tmp_path) -> None:
    from oxidav.authz.authn.accounts import create_user

    user_id = create_user(database, "carol", "pw")
    ensure_root(database, user_id)
    chain = BlobChain(database, LocalBlobStore(tmp_path / "blobs"))
    content = chain.ingest([b"some bytes"])
    with database.write() as session:
        make_folder(session, user_id, "/dir")
        write_file(session, chain, user_id, "/dir/f.txt", content)
    for path in ("", "/dir", "/dir/f.txt", "/missing"):
        with database.read() as session:
            expected = resolve(session, user_id, path)
        row = _NODE_AT.first(database, {"user_id": user_id, "path": path})
        got = None if row is None else NodeInfo.from_row(row)
        assert got == expected
        if got is not None:
            assert got.mtime.tzinfo is not None and isinstance(got.is_folder, bool)


def test_conditional_gets(live_server: LiveServer) -> None:
    created = live_server.request("PUT", url("/cond.bin"), b"x" * 5000)
    etag = created.headers["etag"]
    got = live_server.request("GET", url("/cond.bin"))
    modified = got.headers["last-modified"]
    stamp = util.parse_time_string(modified)
    assert stamp is not None
    later = util.get_rfc1123_time(stamp + 3600)
    earlier = util.get_rfc1123_time(stamp - 3600)

    def status(**headers: str) -> int:
        return live_server.request("GET", url("/cond.bin"), headers=headers).status

    assert status(**{"If-None-Match": etag}) == 304
    assert status(**{"If-None-Match": '"other"'}) == 200
    assert status(**{"If-Modified-Since": modified}) == 304
    assert status(**{"If-Modified-Since": earlier}) == 200
    assert status(**{"If-Match": etag}) == 200
    assert status(**{"If-Match": '"other"'}) == 412
    assert status(**{"If-Unmodified-Since": earlier}) == 412
    assert status(**{"If-Unmodified-Since": later}) == 200
    assert status(**{"If-Match": etag, "If-Unmodified-Since": earlier}) == 200  # §13.2.2
    assert status(**{"If-None-Match": '"other"', "If-Modified-Since": modified}) == 200
    assert status(If=f"([{etag}])") == 200
    assert status(If='(["other"])') == 412
    assert status(If="(<urn:uuid:no-such-lock>)") == 412
    assert status(If="(Not <urn:uuid:no-such-lock>)") == 200
    ranged = live_server.request(
        "GET", url("/cond.bin"), headers={"Range": "bytes=0-9", "If-Range": etag}
    )
    assert ranged.status == 206 and ranged.body == b"x" * 10


def test_ranges_follow_an_overwrite(live_server: LiveServer) -> None:
    rng = random.Random(4)
    first = rng.randbytes(3_000_000)
    second = rng.randbytes(2_500_000)
    for data in (first, second, first):
        assert live_server.request("PUT", url("/v.bin"), data).status in (201, 204)
        for _ in range(5):
            start = rng.randrange(len(data) - 70_000)
            got = live_server.request(
                "GET", url("/v.bin"), headers={"Range": f"bytes={start}-{start + 65_535}"}
            )
            assert got.status == 206 and got.body == data[start : start + 65_536]
        assert live_server.request("GET", url("/v.bin")).body == data


def test_a_warm_range_get_reads_no_chunk_list_and_no_node_through_the_orm(
    live_server: LiveServer,
) -> None:
    data = random.Random(6).randbytes(4_000_000)
    assert live_server.request("PUT", url("/w.bin"), data).status == 201
    warm = live_server.request("GET", url("/w.bin"), headers={"Range": "bytes=0-9"})
    assert warm.status == 206
    assert live_server.services is not None
    seen: list[str] = []
    engine = live_server.services.db.engine
    event.listen(engine, "before_cursor_execute", lambda *args: seen.append(args[2]))
    for start in (0, 1_000_000, 2_500_000, 3_900_000):
        got = live_server.request(
            "GET", url("/w.bin"), headers={"Range": f"bytes={start}-{start + 65_535}"}
        )
        assert got.status == 206 and got.body == data[start : start + 65_536]
    # The chunk list comes from the manifest cache; the node is the one raw read.
    assert not [s for s in seen if "blob_manifest" in s or "FROM nodes" in s]
