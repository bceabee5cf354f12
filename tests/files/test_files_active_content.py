"""Stored content never runs as oxidav's origin: every download has ``nosniff``; HTML, SVG,
XML, JavaScript and other active types come as a sandboxed attachment — over DAV, and
anonymously through a public link's DAV endpoint and its ``/s/<token>`` download."""

from __future__ import annotations

import pytest

from oxidav.authz.grants.targets import user_id
from oxidav.authz.links import store as links
from oxidav.tree import resolve
from tests.support.live import LiveServer

ALICE = "/remote.php/dav/files/alice"
ACTIVE = {
    "page.html": b"<script>alert(document.domain)</script>",
    "logo.svg": b"<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>",
    "feed.xml": b"<x:script xmlns:x='http://www.w3.org/1999/xhtml'>alert(1)</x:script>",
    "app.js": b"alert(1)",
    "page.xhtml": b"<html xmlns='http://www.w3.org/1999/xhtml'><script>alert(1)</script></html>",
}
INERT = {"notes.txt": b"hello", "photo.png": b"\x89PNG\r\n\x1a\n"}


def _assert_active(headers: dict[str, str], name: str) -> None:
    assert headers["x-content-type-options"] == "nosniff", name
    assert headers["content-security-policy"].startswith("sandbox"), name
    assert "default-src 'none'" in headers["content-security-policy"], name
    assert headers["content-disposition"].startswith("attachment"), name


@pytest.fixture
def stored(live_server: LiveServer) -> LiveServer:
    assert live_server.request("MKCOL", f"{ALICE}/P").status == 201
    for name, body in {**ACTIVE, **INERT}.items():
        assert live_server.request("PUT", f"{ALICE}/P/{name}", body).status == 201
    return live_server


def test_dav_downloads_of_active_types_are_sandboxed_attachments(stored: LiveServer) -> None:
    for name, body in ACTIVE.items():
        for method in ("GET", "HEAD"):
            got = stored.request(method, f"{ALICE}/P/{name}")
            assert got.status == 200 and got.body == (body if method == "GET" else b"")
            _assert_active(got.headers, name)
    ranged = stored.request("GET", f"{ALICE}/P/page.html", headers={"Range": "bytes=0-3"})
    assert ranged.status == 206 and ranged.body == b"<scr"
    _assert_active(ranged.headers, "page.html")


def test_inert_types_stay_inline_with_nosniff(stored: LiveServer) -> None:
    for name, body in INERT.items():
        got = stored.request("GET", f"{ALICE}/P/{name}")
        assert got.status == 200 and got.body == body
        assert got.headers["x-content-type-options"] == "nosniff"
        assert "content-disposition" not in got.headers, name


def test_public_link_downloads_are_sandboxed_attachments(stored: LiveServer) -> None:
    assert stored.services is not None
    with stored.services.db.write() as session:
        node = resolve(session, user_id(session, "alice"), "/P")
        assert node is not None
        token = links.create_link(session, node).token
    for name in ACTIVE:
        public_dav = stored.request("GET", f"/public.php/dav/files/{token}/{name}", user=None)
        assert public_dav.status == 200, name
        _assert_active(public_dav.headers, name)
        page = stored.request("GET", f"/s/{token}/download?path=/{name}", user=None)
        assert page.status == 200, name
        _assert_active(page.headers, name)
        assert page.headers["content-disposition"].count("attachment") == 1
    inert = stored.request("GET", f"/s/{token}/download?path=/notes.txt", user=None)
    assert inert.headers["content-disposition"].startswith("attachment")
    assert inert.headers["x-content-type-options"] == "nosniff"
