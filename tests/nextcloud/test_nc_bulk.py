"""Bulk upload (POST /remote.php/dav/bulk) over HTTP — into the uploader's tree and into shares
mounted there — and the multipart reader on its own."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import update

from oxidav.authz.grants.roles import Role
from oxidav.db.models.users import User
from oxidav.nextcloud.bulk.multipart import MultipartError, MultipartReader, boundary_of
from oxidav.nextcloud.context import nextcloud_context
from oxidav.tree import make_folder
from tests.support.engine_events import recorded_selects
from tests.support.live import LiveServer, in_process_server, make_settings
from tests.support.nextcloud import (
    BOUNDARY,
    BULK_HEADERS,
    bulk_body,
    bulk_part,
    content_of,
    node_at,
    share_photos,
    used,
    user_id,
)

BULK = "/remote.php/dav/bulk"
ALICE = "/remote.php/dav/files/alice"


def _setup(live_server: LiveServer) -> tuple[object, int]:
    assert live_server.services is not None
    context = nextcloud_context(live_server.services)
    uid = user_id(context.db, "alice")
    with context.db.write() as session:
        make_folder(session, uid, "/sub")
    return context, uid


def test_bulk_writes_every_file(live_server: LiveServer) -> None:
    context, uid = _setup(live_server)
    body = bulk_body(
        bulk_part("/a.txt", b"hello"),
        bulk_part("/sub/ünï cödé.txt", b"x" * 300_000),
        bulk_part("/empty", b""),
    )
    resp = live_server.request("POST", BULK, body, headers=BULK_HEADERS)
    assert resp.status == 200, resp.text
    result = json.loads(resp.body)
    assert set(result) == {"/a.txt", "/sub/ünï cödé.txt", "/empty"}
    for key, entry in result.items():
        assert entry["error"] is False, (key, entry)
        assert entry["etag"].startswith('"') and entry["permissions"] == "RGDNVW"
        assert entry["fileid"].endswith(live_server.settings.instance_id)
    node = node_at(context.db, uid, "/a.txt")  # type: ignore[attr-defined]
    assert node is not None
    assert content_of(context.chain, node) == b"hello"  # type: ignore[attr-defined]
    assert int(node.mtime.timestamp()) == 1700000000
    assert node.checksums == "MD5:5d41402abc4b2a76b9719d911017c592"
    assert result["/a.txt"]["fileid"] == f"{node.id:08d}{live_server.settings.instance_id}"
    big = node_at(context.db, uid, "/sub/ünï cödé.txt")  # type: ignore[attr-defined]
    assert big is not None and big.size == 300_000


def test_bad_md5_fails_that_file_only(live_server: LiveServer) -> None:
    context, uid = _setup(live_server)
    body = bulk_body(
        bulk_part("/good.txt", b"good"),
        bulk_part("/bad.txt", b"bad", md5="0" * 32),
        bulk_part("/nomd5.txt", b"x", md5=""),
        bulk_part("/missing/parent.txt", b"y"),
        bulk_part("/../escape", b"z"),
    )
    resp = live_server.request("POST", BULK, body, headers=BULK_HEADERS)
    assert resp.status == 200
    result = json.loads(resp.body)
    assert result["/good.txt"]["error"] is False
    for key in ("/bad.txt", "/nomd5.txt", "/missing/parent.txt", "/../escape"):
        assert result[key]["error"] is True and result[key]["message"], key
    assert node_at(context.db, uid, "/bad.txt") is None  # type: ignore[attr-defined]
    assert node_at(context.db, uid, "/good.txt") is not None  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        (b"not multipart at all", {"Content-Type": "application/json"}),
        (b"x", {"Content-Type": "multipart/related"}),  # no boundary
        (b"garbage without boundary", BULK_HEADERS),
        (bulk_part("/a", b"abc")[:-10], BULK_HEADERS),  # truncated inside the part
        (bulk_part("/a", b"abc", length=2) + f"--{BOUNDARY}--".encode(), BULK_HEADERS),
        (bulk_part("/a", b"abc").replace(b"Content-Length: 3\r\n", b""), BULK_HEADERS),
        (bulk_part("/a", b"abc").replace(b"X-File-Path: /a\r\n", b"") + b"--x", BULK_HEADERS),
        (bulk_part("/a", b"abc"), BULK_HEADERS),  # no closing delimiter
    ],
)
def test_bad_multipart_is_400(
    live_server: LiveServer, body: bytes, headers: dict[str, str]
) -> None:
    context, uid = _setup(live_server)
    resp = live_server.request("POST", BULK, body, headers=headers)
    assert resp.status == 400, resp.text
    assert node_at(context.db, uid, "/a") is None  # type: ignore[attr-defined]


def test_bulk_needs_auth_and_post(live_server: LiveServer) -> None:
    body = bulk_body(bulk_part("/a.txt", b"hello"))
    assert live_server.request("POST", BULK, body, headers=BULK_HEADERS, user=None).status == 401
    assert live_server.request("GET", BULK).status == 405


def test_reader_boundary_forms() -> None:
    assert boundary_of('multipart/related; boundary="a b"') == "a b"
    assert boundary_of("multipart/related; charset=x; boundary=abc") == "abc"
    with pytest.raises(MultipartError):
        boundary_of("text/plain; boundary=abc")
    raw = b"preamble\r\n" + bulk_body(bulk_part("/one", b"1"), bulk_part("/two", b"22"))
    reader = MultipartReader(io.BytesIO(raw), BOUNDARY, len(raw))
    seen = [(p.headers["x-file-path"], b"".join(p.body)) for p in reader.parts()]
    assert seen == [("/one", b"1"), ("/two", b"22")]
    # A caller that skips bodies still gets every part.
    reader = MultipartReader(io.BytesIO(raw), BOUNDARY, len(raw))
    assert [p.length for p in reader.parts()] == [1, 2]


# -- into shares mounted in the uploader's tree (authz.grants.mounts / authz.writes) --


def test_bulk_into_an_editor_share_lands_in_the_owners_tree(live_server: LiveServer) -> None:
    alice, bob = share_photos(live_server, Role.EDITOR)
    db = live_server.services.db  # type: ignore[union-attr]
    chain = live_server.services.blobs  # type: ignore[union-attr]
    folder_before, root_before = node_at(db, alice, "/Photos"), node_at(db, alice, "")
    used_before = used(db, alice)
    body = bulk_body(
        bulk_part("/Photos/new.txt", b"from bob"),
        bulk_part("/Photos/sub/deep é.txt", b"deep"),
        bulk_part("/Photos/a.txt", b"overwritten"),
        bulk_part("/mine.txt", b"own"),
    )
    resp = live_server.request("POST", BULK, body, headers=BULK_HEADERS, user="bob")
    assert resp.status == 200, resp.text
    result = json.loads(resp.body)
    assert all(entry["error"] is False for entry in result.values()), result
    assert result["/Photos/new.txt"]["permissions"] == "SGDNVW"  # a share's file, editor
    assert result["/mine.txt"]["permissions"] == "RGDNVW"  # his own
    for path, data in (("/new.txt", b"from bob"), ("/sub/deep é.txt", b"deep")):
        node = node_at(db, alice, "/Photos" + path)
        assert node is not None and content_of(chain, node) == data, path
    overwritten = node_at(db, alice, "/Photos/a.txt")
    assert overwritten is not None and content_of(chain, overwritten) == b"overwritten"
    new = node_at(db, alice, "/Photos/new.txt")
    assert new is not None and result["/Photos/new.txt"]["fileid"].startswith(f"{new.id:08d}")
    mine = node_at(db, bob, "/mine.txt")
    assert mine is not None and content_of(chain, mine) == b"own"
    assert node_at(db, bob, "/Photos") is None  # nothing of the share in bob's own tree
    # alice's quota pays for the share's bytes, bob's for his own; alice's etags rolled up.
    assert used(db, alice) == used_before + len(b"from bobdeep") + 6
    assert used(db, bob) == 3
    folder_after, root_after = node_at(db, alice, "/Photos"), node_at(db, alice, "")
    assert folder_before is not None and folder_after is not None
    assert root_before is not None and root_after is not None
    assert folder_after.etag != folder_before.etag and root_after.etag != root_before.etag


def test_bulk_into_a_viewer_share_fails_those_files_only(live_server: LiveServer) -> None:
    alice, bob = share_photos(live_server, Role.VIEWER)
    db = live_server.services.db  # type: ignore[union-attr]
    chain = live_server.services.blobs  # type: ignore[union-attr]
    body = bulk_body(
        bulk_part("/Photos/new.txt", b"x"),
        bulk_part("/Photos/a.txt", b"overwritten"),
        bulk_part("/mine.txt", b"own"),
    )
    resp = live_server.request("POST", BULK, body, headers=BULK_HEADERS, user="bob")
    assert resp.status == 200, resp.text
    result = json.loads(resp.body)
    for key in ("/Photos/new.txt", "/Photos/a.txt"):
        assert result[key]["error"] is True and result[key]["message"].startswith("403"), key
    assert result["/mine.txt"]["error"] is False
    assert node_at(db, alice, "/Photos/new.txt") is None
    kept = node_at(db, alice, "/Photos/a.txt")
    assert kept is not None and content_of(chain, kept) == b"alpha"
    assert node_at(db, bob, "/Photos/new.txt") is None


def test_bulk_into_a_share_counts_against_the_owners_quota(live_server: LiveServer) -> None:
    alice, _bob = share_photos(live_server, Role.EDITOR)
    assert live_server.services is not None
    with live_server.services.db.write() as session:
        session.execute(update(User).where(User.id == alice).values(quota_bytes=10))
    body = bulk_body(bulk_part("/Photos/big.bin", b"z" * 100), bulk_part("/big.bin", b"z" * 100))
    resp = live_server.request("POST", BULK, body, headers=BULK_HEADERS, user="bob")
    result = json.loads(resp.body)
    assert result["/Photos/big.bin"]["error"] is True
    assert result["/Photos/big.bin"]["message"].startswith("507")
    assert result["/big.bin"]["error"] is False  # bob's own quota is not alice's
    assert node_at(live_server.services.db, alice, "/Photos/big.bin") is None


@pytest.fixture
def incoming_server(db_url: str, tmp_path: Path) -> Iterator[LiveServer]:
    settings = make_settings(tmp_path / "data", db_url, share_folder="/Incoming")
    with in_process_server(settings) as server:
        yield server


def test_bulk_outside_the_share_folder_asks_no_grant_query(incoming_server: LiveServer) -> None:
    server = incoming_server
    alice, _bob = share_photos(server, Role.EDITOR)
    assert server.services is not None
    db_engine = server.services.db.engine
    with recorded_selects(db_engine) as seen:
        own = bulk_body(bulk_part("/mine.txt", b"own"))
        resp = server.request("POST", BULK, own, headers=BULK_HEADERS, user="bob")
    assert json.loads(resp.body)["/mine.txt"]["error"] is False
    assert not [s for s in seen if "grants" in s or "authz_state" in s]
    shared = bulk_body(bulk_part("/Incoming/Photos/new.txt", b"new"))
    resp = server.request("POST", BULK, shared, headers=BULK_HEADERS, user="bob")
    assert json.loads(resp.body)["/Incoming/Photos/new.txt"]["error"] is False
    assert node_at(server.services.db, alice, "/Photos/new.txt") is not None
