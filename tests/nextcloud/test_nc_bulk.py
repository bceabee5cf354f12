"""Bulk upload (POST /remote.php/dav/bulk) over HTTP, and the multipart reader on its own."""

from __future__ import annotations

import io
import json

import pytest
from nc_helpers import BOUNDARY, BULK_HEADERS, bulk_body, bulk_part, content_of, node_at, user_id

from oxidav.nextcloud.bulk.multipart import MultipartError, MultipartReader, boundary_of
from oxidav.nextcloud.context import nextcloud_context
from oxidav.tree import make_folder
from tests.support.live import LiveServer

BULK = "/remote.php/dav/bulk"


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
