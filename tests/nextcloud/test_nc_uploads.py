"""Chunked upload v2 over HTTP: MKCOL, PUT chunks, PROPFIND to resume, MOVE .file, DELETE —
into the uploader's tree and into shares mounted there."""

from __future__ import annotations

import hashlib
import re

from sqlalchemy import update

from oxidav.authz.grants.roles import Role
from oxidav.db.models.users import User
from oxidav.nextcloud.context import nextcloud_context
from tests.support.live import LiveServer
from tests.support.nextcloud import content_of, node_at, share_photos, used, user_id

UP = "/remote.php/dav/uploads/alice"
FILES = "/remote.php/dav/files/alice"


def _upload(live: LiveServer, transfer: str, chunks: dict[str, bytes]) -> None:
    assert live.request("MKCOL", f"{UP}/{transfer}").status == 201
    for name, data in chunks.items():
        resp = live.request("PUT", f"{UP}/{transfer}/{name}", data)
        assert resp.status in (201, 204), resp.text


def test_chunked_upload_assembles_in_numeric_order(live_server: LiveServer) -> None:
    assert live_server.services is not None
    context = nextcloud_context(live_server.services)
    # Mixed padding: numeric order is 1, 2, 10 (text order would be 00010, 00002, 1).
    chunks = {"00010": b"C" * 70_000, "1": b"A" * 100_000, "00002": b"B" * 5}
    _upload(live_server, "4242", chunks)
    resp = live_server.request("PROPFIND", f"{UP}/4242/", headers={"Depth": "1"})
    assert resp.status == 207
    hrefs = re.findall(r"<D:href>([^<]+)</D:href>", resp.text, re.IGNORECASE)
    assert [h.rsplit("/", 1)[-1] for h in hrefs[1:]] == ["1", "00002", "00010"]
    expected = b"A" * 100_000 + b"B" * 5 + b"C" * 70_000
    sha1 = hashlib.sha1(expected).hexdigest()
    resp = live_server.request(
        "MOVE",
        f"{UP}/4242/.file",
        headers={
            "Destination": f"{FILES}/big%20file.bin",
            "OC-Total-Length": str(len(expected)),
            "X-OC-Mtime": "1600000000",
            "OC-Checksum": f"SHA1:{sha1}",
        },
    )
    assert resp.status == 201, resp.text
    assert resp.headers["oc-fileid"].endswith(live_server.settings.instance_id)
    assert resp.headers["oc-etag"].startswith('"') and resp.headers["etag"]
    assert resp.headers["x-oc-mtime"] == "accepted"
    node = node_at(context.db, user_id(context.db, "alice"), "/big file.bin")
    assert node is not None
    assert content_of(context.chain, node) == expected
    assert int(node.mtime.timestamp()) == 1600000000
    assert node.checksums == f"SHA1:{sha1}"
    assert f"{node.id:08d}" in resp.headers["oc-fileid"]
    # The session is gone.
    assert live_server.request("PROPFIND", f"{UP}/4242/", headers={"Depth": "0"}).status == 404


def test_overwrite_with_if_etag(live_server: LiveServer) -> None:
    _upload(live_server, "1", {"1": b"first"})
    first = live_server.request("MOVE", f"{UP}/1/.file", headers={"Destination": f"{FILES}/f.txt"})
    assert first.status == 201
    _upload(live_server, "2", {"1": b"second"})
    stale = live_server.request(
        "MOVE",
        f"{UP}/2/.file",
        headers={"Destination": f"{FILES}/f.txt", "If": f'<{FILES}/f.txt> (["nope"])'},
    )
    assert stale.status == 412
    etag = first.headers["oc-etag"]
    ok = live_server.request(
        "MOVE",
        f"{UP}/2/.file",
        headers={"Destination": f"{FILES}/f.txt", "If": f"<{FILES}/f.txt> ([{etag}])"},
    )
    assert ok.status == 204, ok.text
    assert ok.headers["oc-etag"] != etag


def test_total_length_and_checksum_mismatch(live_server: LiveServer) -> None:
    _upload(live_server, "7", {"1": b"abc", "2": b"def"})
    dest = {"Destination": f"{FILES}/x"}
    resp = live_server.request("MOVE", f"{UP}/7/.file", headers={**dest, "OC-Total-Length": "5"})
    assert resp.status == 400
    bad = {**dest, "OC-Checksum": "SHA1:" + "0" * 40}
    assert live_server.request("MOVE", f"{UP}/7/.file", headers=bad).status == 400
    assert live_server.request("MOVE", f"{UP}/7/.file", headers={}).status == 400  # no Destination
    # Nothing was written and the session is still there to retry.
    assert live_server.request("PROPFIND", f"{FILES}/x", headers={"Depth": "0"}).status == 404
    assert live_server.request("MOVE", f"{UP}/7/.file", headers=dest).status == 201


def test_delete_chunk_and_session(live_server: LiveServer) -> None:
    _upload(live_server, "9", {"1": b"a", "2": b"b"})
    assert live_server.request("DELETE", f"{UP}/9/2").status == 204
    resp = live_server.request("PROPFIND", f"{UP}/9/", headers={"Depth": "1"})
    assert resp.text.count("<D:response>") + resp.text.count("<d:response>") == 2
    assert live_server.request("DELETE", f"{UP}/9/").status == 204
    assert live_server.request("PROPFIND", f"{UP}/9/", headers={"Depth": "0"}).status == 404


def test_error_paths(live_server: LiveServer) -> None:
    # Unknown session: PUT of a chunk, MOVE, DELETE.
    assert live_server.request("PUT", f"{UP}/nope/1", b"x").status in (404, 409)
    assert (
        live_server.request(
            "MOVE", f"{UP}/nope/.file", headers={"Destination": f"{FILES}/x"}
        ).status
        == 404
    )
    assert live_server.request("DELETE", f"{UP}/nope/").status == 404
    # MKCOL twice: 405.
    assert live_server.request("MKCOL", f"{UP}/dup").status == 201
    assert live_server.request("MKCOL", f"{UP}/dup").status == 405
    # A chunk PUT into an existing session works.
    resp = live_server.request("PUT", f"{UP}/dup/1", b"abc", headers={"OC-Chunk-Offset": "0"})
    assert resp.status == 201
    # Foreign user's session: 404 for bob, for every verb.
    for method in ("PROPFIND", "DELETE", "MKCOL"):
        assert live_server.request(method, f"{UP}/dup/", user="bob").status == 404
    assert live_server.request("PUT", f"{UP}/dup/2", b"x", user="bob").status == 404
    assert (
        live_server.request(
            "MOVE",
            f"{UP}/dup/.file",
            headers={"Destination": "/remote.php/dav/files/bob/x"},
            user="bob",
        ).status
        == 404
    )
    # bob cannot assemble alice's session into his files either way round.
    assert (
        live_server.request(
            "MOVE", f"{UP}/dup/.file", headers={"Destination": "/remote.php/dav/files/bob/x"}
        ).status
        == 404
    )
    # Destination outside files/: 400.
    assert live_server.request(
        "MOVE", f"{UP}/dup/.file", headers={"Destination": "/remote.php/dav/calendars/x"}
    ).status in (400, 404)
    # Quota announced at MKCOL.
    assert live_server.request("MKCOL", f"{UP}/q", headers={"OC-Total-Length": "abc"}).status == 400


def test_purge_stale_sessions(live_server: LiveServer) -> None:
    from datetime import timedelta

    from oxidav.db import utcnow
    from oxidav.nextcloud.uploads.sessions import purge_stale

    assert live_server.services is not None
    context = nextcloud_context(live_server.services)
    _upload(live_server, "old", {"1": b"zzz"})
    assert purge_stale(context.db, context.chain) == 0
    assert purge_stale(context.db, context.chain, now=utcnow() + timedelta(hours=25)) == 1
    assert live_server.request("PROPFIND", f"{UP}/old/", headers={"Depth": "0"}).status == 404


# -- into shares mounted in the uploader's tree (authz.grants.mounts / authz.writes) --

BOB_UP = "/remote.php/dav/uploads/bob"
BOB_FILES = "/remote.php/dav/files/bob"


def _bob_upload(live: LiveServer, transfer: str, data: bytes, dest: str | None) -> None:
    """MKCOL and two chunks as bob, each naming ``dest`` as the Nextcloud client does."""
    headers = {"Destination": dest} if dest else {}
    mkcol = live.request(
        "MKCOL",
        f"{BOB_UP}/{transfer}",
        headers={**headers, "OC-Total-Length": str(len(data))},
        user="bob",
    )
    assert mkcol.status == 201, mkcol.text
    half = len(data) // 2
    for name, chunk in (("00001", data[:half]), ("00002", data[half:])):
        put = live.request("PUT", f"{BOB_UP}/{transfer}/{name}", chunk, headers=headers, user="bob")
        assert put.status == 201, put.text


def _assemble(live: LiveServer, transfer: str, dest: str, total: int) -> int:
    headers = {"Destination": dest, "OC-Total-Length": str(total)}
    return live.request("MOVE", f"{BOB_UP}/{transfer}/.file", headers=headers, user="bob").status


def test_chunked_upload_into_an_editor_share(live_server: LiveServer) -> None:
    alice, bob = share_photos(live_server, Role.EDITOR)
    assert live_server.services is not None
    db, chain = live_server.services.db, live_server.services.blobs
    folder_before = node_at(db, alice, "/Photos")
    used_before = used(db, alice)
    data = bytes(range(256)) * 1000
    dest = f"{BOB_FILES}/Photos/sub/big%20%C3%A9.bin"
    _bob_upload(live_server, "t1", data, dest)
    headers = {"Destination": dest, "OC-Total-Length": str(len(data)), "X-OC-Mtime": "1600000000"}
    done = live_server.request("MOVE", f"{BOB_UP}/t1/.file", headers=headers, user="bob")
    assert done.status == 201, done.text
    node = node_at(db, alice, "/Photos/sub/big é.bin")
    assert node is not None and content_of(chain, node) == data
    assert done.headers["oc-fileid"].startswith(f"{node.id:08d}")
    assert used(db, alice) == used_before + len(data) and used(db, bob) == 0
    folder_after = node_at(db, alice, "/Photos")
    assert folder_before is not None and folder_after is not None
    assert folder_after.etag != folder_before.etag
    got = live_server.request("GET", f"{BOB_FILES}/Photos/sub/big%20%C3%A9.bin", user="bob")
    assert (got.status, got.body) == (200, data)
    # Overwriting an existing file of the share: 204; without Destination on MKCOL/PUT too.
    _bob_upload(live_server, "t2", b"shorter", None)
    assert _assemble(live_server, "t2", f"{BOB_FILES}/Photos/a.txt", 7) == 204
    overwritten = node_at(db, alice, "/Photos/a.txt")
    assert overwritten is not None and content_of(chain, overwritten) == b"shorter"


def test_chunked_upload_into_a_viewer_share_is_refused(live_server: LiveServer) -> None:
    alice, bob = share_photos(live_server, Role.VIEWER)
    assert live_server.services is not None
    db = live_server.services.db
    dest = f"{BOB_FILES}/Photos/new.bin"
    headers = {"Destination": dest, "OC-Total-Length": "6"}
    assert live_server.request("MKCOL", f"{BOB_UP}/v1", headers=headers, user="bob").status == 403
    _bob_upload(live_server, "v2", b"abcdef", None)  # a session that names no destination
    assert _assemble(live_server, "v2", dest, 6) == 403
    assert _assemble(live_server, "v2", f"{BOB_FILES}/Photos/a.txt", 6) == 403
    assert _assemble(live_server, "v2", "/remote.php/dav/files/alice/secret.bin", 6) == 404
    assert node_at(db, alice, "/Photos/new.bin") is None
    kept = node_at(db, alice, "/Photos/a.txt")
    assert kept is not None and kept.size == 5
    # The session is still there, and bob may still assemble it into his own tree.
    assert _assemble(live_server, "v2", f"{BOB_FILES}/mine.bin", 6) == 201
    assert node_at(db, bob, "/mine.bin") is not None


def test_chunked_upload_into_a_share_checks_the_owners_quota(live_server: LiveServer) -> None:
    alice, bob = share_photos(live_server, Role.EDITOR)
    assert live_server.services is not None
    db = live_server.services.db
    with db.write() as session:
        session.execute(update(User).where(User.id == alice).values(quota_bytes=50))
    dest = f"{BOB_FILES}/Photos/big.bin"
    headers = {"Destination": dest, "OC-Total-Length": "100"}
    assert live_server.request("MKCOL", f"{BOB_UP}/q1", headers=headers, user="bob").status == 507
    _bob_upload(live_server, "q2", b"z" * 100, None)
    assert _assemble(live_server, "q2", dest, 100) == 507
    assert node_at(db, alice, "/Photos/big.bin") is None
    assert _assemble(live_server, "q2", f"{BOB_FILES}/big.bin", 100) == 201  # his own quota
    assert node_at(db, bob, "/big.bin") is not None


def test_put_of_the_uploads_root_is_a_client_error(live_server: LiveServer) -> None:
    """A PUT whose target is the uploads root (directly or via ``..``) has no parent: 4xx, not
    a 500 (found by tests/fuzz)."""
    for path in ("/remote.php/dav/uploads/", f"{UP}/../"):
        resp = live_server.request("PUT", path, b"abc")
        assert 400 <= resp.status < 500, (path, resp.status, resp.text)
    assert live_server.request("PROPFIND", f"{FILES}/", headers={"Depth": "0"}).status == 207
