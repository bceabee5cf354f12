"""Public links over real HTTP: ``/s/<token>`` pages and downloads, ``/public.php/webdav``.

Links are made through ``oxidav.authz.links.store`` here; the OCS API that makes them for clients is
tested in ``tests/nextcloud/test_nc_link_shares.py``.
"""

from __future__ import annotations

import io
import logging
import random
import zipfile
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import update

from oxidav.authz.links import store as links
from oxidav.authz.links.store import LinkMode
from oxidav.db import utcnow
from oxidav.db.models.links import PublicLink
from tests.support.live import LiveServer, in_process_server, make_settings
from tests.support.public_links import ALICE, SECRET, basic, make_link, populate

DAV = "/public.php/webdav"


@pytest.fixture
def server(live_server: LiveServer) -> LiveServer:
    return populate(live_server)


def as_link(
    server: LiveServer,
    method: str,
    path: str,
    token: str,
    password: str = "",
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    server.users[token] = password
    resp = server.request(method, path, body, headers=headers, user=token)
    return resp.status, resp.headers, resp.body


# -- /s/<token> ------------------------------------------------------------------------------


def test_file_link_downloads_without_credentials(server: LiveServer) -> None:
    token = make_link(server, "/P/a.txt")
    resp = server.request("GET", f"/s/{token}", user=None)
    assert (resp.status, resp.body) == (200, b"alpha")
    assert resp.headers["content-disposition"].startswith('attachment; filename="a.txt"')
    etag = resp.headers["etag"]
    resp = server.request("GET", f"/s/{token}/download", user=None, headers={"Range": "bytes=1-3"})
    assert (resp.status, resp.body, resp.headers["content-range"]) == (206, b"lph", "bytes 1-3/5")
    resp = server.request("GET", f"/s/{token}", user=None, headers={"If-None-Match": etag})
    assert resp.status == 304
    resp = server.request("HEAD", f"/s/{token}", user=None)
    assert (resp.status, resp.headers["content-length"], resp.body) == (200, "5", b"")
    # Nothing below a file, and no other verbs.
    assert server.request("GET", f"/s/{token}/download?path=/x", user=None).status == 404
    assert server.request("DELETE", f"/s/{token}", user=None).status == 405
    assert server.request("GET", f"/s/{token}/other", user=None).status == 404


def test_folder_listing_escapes_names_and_downloads_files(server: LiveServer) -> None:
    token = make_link(server, "/P")
    resp = server.request("GET", f"/s/{token}", user=None, headers={"Accept": "text/html"})
    assert resp.status == 200 and resp.headers["content-type"].startswith("text/html")
    assert "&lt;b&gt;&amp;.txt" in resp.text and "<b>" not in resp.text
    assert "default-src 'none'" in resp.headers["content-security-policy"]
    assert f"/s/{token}/download?path=%2Fa.txt" in resp.text
    assert "secret" not in resp.text
    head = server.request("HEAD", f"/s/{token}", user=None)
    assert (head.status, head.body, head.headers["content-length"]) == (
        200,
        b"",
        str(len(resp.body)),
    )
    resp = server.request("GET", f"/s/{token}?path=/sub", user=None)
    assert resp.status == 200 and "c.txt" in resp.text and "a.txt" not in resp.text
    resp = server.request("GET", f"/s/{token}/download?path=%2Fsub%2Fc.txt", user=None)
    assert (resp.status, resp.body) == (200, b"sea")
    assert "filename*=UTF-8''c.txt" in resp.headers["content-disposition"]
    resp = server.request("GET", f"/s/{token}/download?path=/%3Cb%3E%26.txt", user=None)
    assert (resp.status, resp.body) == (200, b"bee")
    assert server.request("GET", f"/s/{token}?path=/missing", user=None).status == 404


def _zip_entries(body: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        assert archive.testzip() is None
        return {info.filename: archive.read(info) for info in archive.infolist()}


def test_folder_downloads_as_a_zip_of_its_subtree(server: LiveServer) -> None:
    token = make_link(server, "/P")
    big = random.Random(5).randbytes(3 << 20)
    assert server.request("PUT", ALICE + "/P/sub/big.bin", big).status == 201
    resp = server.request("GET", f"/s/{token}/download", user=None)
    assert resp.status == 200 and resp.headers["content-type"] == "application/zip"
    assert "filename*=UTF-8''P.zip" in resp.headers["content-disposition"]
    assert _zip_entries(resp.body) == {
        "<b>&.txt": b"bee",
        "a.txt": b"alpha",
        "sub/": b"",
        "sub/big.bin": big,
        "sub/c.txt": b"sea",
    }
    resp = server.request("GET", f"/s/{token}/download?path=/sub", user=None)
    assert resp.status == 200
    assert _zip_entries(resp.body) == {"big.bin": big, "c.txt": b"sea"}
    head = server.request("HEAD", f"/s/{token}/download", user=None)
    assert (head.status, head.body) == (200, b"")
    upload_only = make_link(server, "/P/sub", mode=LinkMode.UPLOAD)
    assert server.request("GET", f"/s/{upload_only}/download", user=None).status == 403


def test_unknown_token_is_404(server: LiveServer) -> None:
    for path in ("/s/NoSuchToken123456789", "/s/bad%20token", "/s/" + "x" * 100):
        assert server.request("GET", path, user=None).status == 404


def test_password_is_enforced(server: LiveServer) -> None:
    token = make_link(server, "/P", password="open sesame")
    resp = server.request("GET", f"/s/{token}", user=None)
    assert resp.status == 401 and resp.headers["www-authenticate"].startswith("Basic")
    browser = {"Accept": "text/html"}
    resp = server.request("GET", f"/s/{token}", user=None, headers=browser)
    assert resp.status == 401 and 'type="password"' in resp.text
    assert resp.headers["www-authenticate"].startswith("Form")  # no browser Basic dialog
    headers = basic("anyone", "wrong")
    assert server.request("GET", f"/s/{token}", user=None, headers=headers).status == 401
    headers = basic("anyone", "open sesame")
    resp = server.request("GET", f"/s/{token}/download?path=/a.txt", user=None, headers=headers)
    assert (resp.status, resp.body) == (200, b"alpha")
    # Public WebDAV: user name = token, password = the link password.
    assert as_link(server, "PROPFIND", DAV + "/", token, "wrong", headers={"Depth": "0"})[0] == 401
    assert as_link(server, "PROPFIND", DAV + "/", token, headers={"Depth": "0"})[0] == 401
    status = as_link(server, "PROPFIND", DAV + "/", token, "open sesame", headers={"Depth": "0"})
    assert status[0] == 207


def test_password_form_sets_a_cookie_bound_to_the_password(server: LiveServer) -> None:
    token = make_link(server, "/P", password="pw1")
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    resp = server.request("POST", f"/s/{token}", "password=nope", headers=form, user=None)
    assert resp.status == 401 and "wrong" in resp.text
    resp = server.request("POST", f"/s/{token}", "password=pw1", headers=form, user=None)
    assert (resp.status, resp.headers["location"]) == (303, f"/s/{token}")
    cookie = resp.headers["set-cookie"]
    for attribute in ("HttpOnly", "SameSite=Lax", f"Path=/s/{token}"):
        assert attribute in cookie
    sent = {"Cookie": cookie.split(";", 1)[0]}
    resp = server.request("GET", f"/s/{token}/download?path=/a.txt", user=None, headers=sent)
    assert (resp.status, resp.body) == (200, b"alpha")
    # A forged or tampered cookie opens nothing.
    name, _, value = sent["Cookie"].partition("=")
    stamp, _, mac = value.partition(".")
    for bad in (f"{int(stamp) + 1}.{mac}", f"{stamp}.{'0' * len(mac)}", "garbage"):
        forged = {"Cookie": f"{name}={bad}"}
        assert server.request("GET", f"/s/{token}", user=None, headers=forged).status == 401
    # Changing the password invalidates every cookie issued under the old one.
    assert server.services is not None
    with server.services.db.write() as session:
        row = links.link_by_token(session, token)
        assert row is not None
        links.update_link(session, row, password="pw2")
    assert server.request("GET", f"/s/{token}", user=None, headers=sent).status == 401
    assert server.request("GET", f"/s/{token}", user=None, headers=basic("x", "pw1")).status == 401
    assert server.request("GET", f"/s/{token}", user=None, headers=basic("x", "pw2")).status == 200


@pytest.fixture
def strict_server(db_url: str, tmp_path: Path) -> Iterator[LiveServer]:
    """A server that throttles after 3 failures."""
    settings = make_settings(tmp_path / "data", db_url, auth_max_failures=3)
    with in_process_server(settings) as live:
        yield populate(live)


def test_wrong_passwords_are_rate_limited(strict_server: LiveServer) -> None:
    server = strict_server
    token = make_link(server, "/P", password="right")
    other = make_link(server, "/P/a.txt", password="right")
    for _ in range(3):
        resp = server.request("GET", f"/s/{token}", user=None, headers=basic("x", "wrong"))
        assert resp.status == 401
    resp = server.request("GET", f"/s/{token}", user=None, headers=basic("x", "right"))
    assert resp.status == 429 and int(resp.headers["retry-after"]) > 0
    # The same throttle guards the link's WebDAV, and the right password stays refused.
    status, headers, _ = as_link(server, "PROPFIND", DAV + "/", token, "right")
    assert status == 429 and "retry-after" in headers
    # It is per token: another link is not throttled.
    resp = server.request("GET", f"/s/{other}", user=None, headers=basic("x", "right"))
    assert (resp.status, resp.body) == (200, b"alpha")


def test_deleted_link_stops_working_at_once(server: LiveServer) -> None:
    token = make_link(server, "/P")
    assert server.request("GET", f"/s/{token}", user=None).status == 200
    assert as_link(server, "GET", DAV + "/a.txt", token)[0] == 200
    assert server.services is not None
    with server.services.db.write() as session:
        assert links.delete_link(session, token)
    assert server.request("GET", f"/s/{token}", user=None).status == 404
    assert as_link(server, "GET", DAV + "/a.txt", token)[0] == 401


def test_expired_link_stops_working_at_once(server: LiveServer) -> None:
    token = make_link(server, "/P/a.txt")
    assert server.services is not None
    db = server.services.db
    with db.write() as session:
        soon = utcnow() + timedelta(days=1)
        session.execute(update(PublicLink).where(PublicLink.token == token).values(expires_at=soon))
    assert server.request("GET", f"/s/{token}", user=None).status == 200
    with db.write() as session:
        past = utcnow() - timedelta(seconds=1)
        session.execute(update(PublicLink).where(PublicLink.token == token).values(expires_at=past))
    assert server.request("GET", f"/s/{token}", user=None).status == 404
    assert as_link(server, "GET", DAV, token)[0] == 401


def test_trashed_node_kills_the_link(server: LiveServer) -> None:
    token = make_link(server, "/P/a.txt")
    assert server.request("GET", f"/s/{token}", user=None).status == 200
    assert server.request("DELETE", ALICE + "/P/a.txt").status == 204
    assert server.request("GET", f"/s/{token}", user=None).status == 404
    # A new file at the same path is another node: the link stays dead.
    assert server.request("PUT", ALICE + "/P/a.txt", b"new").status == 201
    assert server.request("GET", f"/s/{token}", user=None).status == 404


def test_link_follows_a_moved_node(server: LiveServer) -> None:
    token = make_link(server, "/P/sub")
    dest = {"Destination": ALICE + "/moved"}
    assert server.request("MOVE", ALICE + "/P/sub", headers=dest).status == 201
    resp = server.request("GET", f"/s/{token}/download?path=/c.txt", user=None)
    assert (resp.status, resp.body) == (200, b"sea")


# -- /public.php/webdav ----------------------------------------------------------------------


def test_read_only_webdav(server: LiveServer) -> None:
    token = make_link(server, "/P")
    status, _, body = as_link(server, "PROPFIND", DAV + "/", token, headers={"Depth": "1"})
    assert status == 207
    text = body.decode()
    assert f"{DAV}/a.txt" in text and f"{DAV}/sub/" in text and "secret" not in text
    assert "/remote.php" not in text
    assert as_link(server, "GET", DAV + "/sub/c.txt", token)[2] == b"sea"
    assert as_link(server, "HEAD", DAV + "/a.txt", token)[0] == 200
    assert as_link(server, "PUT", DAV + "/a.txt", token, body=b"x")[0] == 403
    assert as_link(server, "PUT", DAV + "/new.txt", token, body=b"x")[0] == 403
    assert as_link(server, "DELETE", DAV + "/a.txt", token)[0] == 403
    assert as_link(server, "MKCOL", DAV + "/d", token)[0] == 403
    lock = b'<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/>'
    lock += b"</D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>"
    assert as_link(server, "LOCK", DAV + "/a.txt", token, body=lock)[0] == 403
    move = {"Destination": DAV + "/b.txt"}
    assert as_link(server, "MOVE", DAV + "/a.txt", token, headers=move)[0] == 403
    assert server.request("GET", ALICE + "/P/a.txt").body == b"alpha"
    # No token, or a user's own credentials: nothing.
    assert server.request("GET", DAV + "/a.txt", user=None).status == 401
    assert server.request("GET", DAV + "/a.txt", user="alice").status == 401


def test_file_link_webdav_root_is_the_file(server: LiveServer) -> None:
    token = make_link(server, "/P/a.txt")
    assert as_link(server, "GET", DAV, token)[2] == b"alpha"
    assert as_link(server, "GET", DAV + "/x", token)[0] == 404


def test_upload_only_link(server: LiveServer) -> None:
    token = make_link(server, "/P", mode=LinkMode.UPLOAD)
    assert as_link(server, "PUT", DAV + "/drop.txt", token, body=b"dropped")[0] == 201
    assert server.request("GET", ALICE + "/P/drop.txt").body == b"dropped"
    # No overwrite (a name taken lands under a new one, answered alike), no reading, no listing.
    assert as_link(server, "PUT", DAV + "/drop.txt", token, body=b"again")[0] == 201
    assert as_link(server, "PUT", DAV + "/a.txt", token, body=b"evil")[0] == 201
    assert server.request("GET", ALICE + "/P/a.txt").body == b"alpha"
    assert server.request("GET", ALICE + "/P/drop.txt").body == b"dropped"
    assert server.request("GET", ALICE + "/P/drop%20(2).txt").body == b"again"
    assert server.request("GET", ALICE + "/P/a%20(2).txt").body == b"evil"
    assert as_link(server, "GET", DAV + "/drop.txt", token)[0] == 403
    assert as_link(server, "PROPFIND", DAV + "/", token, headers={"Depth": "1"})[0] == 403
    assert as_link(server, "PROPFIND", DAV + "/", token, headers={"Depth": "0"})[0] == 207
    assert as_link(server, "DELETE", DAV + "/drop.txt", token)[0] == 403
    assert as_link(server, "MKCOL", DAV + "/box", token)[0] == 201
    assert as_link(server, "PUT", DAV + "/box/in.txt", token, body=b"in")[0] == 201
    resp = server.request("GET", f"/s/{token}", user=None)
    assert resp.status == 200 and "drop.txt" not in resp.text and "a.txt" not in resp.text
    assert server.request("GET", f"/s/{token}/download?path=/a.txt", user=None).status == 403


def test_edit_link_writes_inside_its_folder_only(server: LiveServer) -> None:
    token = make_link(server, "/P", mode=LinkMode.EDIT)
    assert as_link(server, "PUT", DAV + "/a.txt", token, body=b"edited")[0] == 204
    assert server.request("GET", ALICE + "/P/a.txt").body == b"edited"
    inside = {"Destination": DAV + "/sub/a.txt"}
    assert as_link(server, "MOVE", DAV + "/a.txt", token, headers=inside)[0] == 201
    outside = {"Destination": ALICE + "/stolen.txt"}
    assert as_link(server, "COPY", DAV + "/sub/a.txt", token, headers=outside)[0] == 403
    escape = {"Destination": DAV + "/../remote.php/dav/files/alice/x.txt"}
    assert as_link(server, "COPY", DAV + "/sub/a.txt", token, headers=escape)[0] in (403, 404)
    assert as_link(server, "DELETE", DAV + "/", token)[0] == 403
    assert as_link(server, "DELETE", DAV + "/sub/a.txt", token)[0] == 204
    assert server.request("GET", ALICE + "/stolen.txt").status == 404


@pytest.mark.parametrize(
    "path",
    [
        "/../secret.txt",
        "/%2E%2E/secret.txt",
        "/..%2Fsecret.txt",
        "/sub/../../secret.txt",
        "/%2e%2e%2fsecret.txt",
    ],
)
def test_link_cannot_reach_outside_its_folder(server: LiveServer, path: str) -> None:
    token = make_link(server, "/P")
    status, _, body = as_link(server, "GET", DAV + path, token)
    assert status in (401, 404) and SECRET not in body
    resp = server.request("GET", f"/s/{token}/download?path={path}", user=None)
    assert resp.status == 404 and SECRET not in resp.body
    resp = server.request("GET", f"/s/{token}?path={path}", user=None)
    assert resp.status == 404


def test_every_denial_writes_one_audit_line(
    server: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    token = make_link(server, "/P", password="pw")
    caplog.set_level(logging.INFO, logger="oxidav.audit")
    server.request("GET", f"/s/{token}", user=None, headers=basic("x", "bad"))
    as_link(server, "PUT", DAV + "/a.txt", token, "pw", body=b"x")
    lines = [r.getMessage() for r in caplog.records if r.name == "oxidav.audit"]
    assert len(lines) == 2
    assert "reason='wrong password'" in lines[0] and "status=401" in lines[0]
    assert "reason='this link is read-only'" in lines[1] and "status=403" in lines[1]
    assert all(token not in line for line in lines)  # logs never carry a working link
