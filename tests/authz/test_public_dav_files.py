"""``/public.php/dav/files/<token>/``: Nextcloud 29+'s public-link WebDAV, token in the path.

Same links and tree as ``test_public_links.py`` (alice's ``/P`` and ``/secret.txt`` beside it);
what differs is how a client names the link (first path segment) and authenticates (nothing for
a link without a password; Basic with any user name and the link password otherwise).
"""

from __future__ import annotations

import re

import pytest

from oxidav.authz.links import store as links
from oxidav.authz.links.store import LinkMode
from tests.support.live import LiveServer
from tests.support.public_links import ALICE, SECRET, basic, make_link, populate

DAV = "/public.php/dav/files"


@pytest.fixture
def server(live_server: LiveServer) -> LiveServer:
    return populate(live_server)


def anon(
    server: LiveServer,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    resp = server.request(method, path, body, headers=headers, user=None)
    return resp.status, resp.headers, resp.body


def test_read_only_link_needs_no_credentials(server: LiveServer) -> None:
    token = make_link(server, "/P")
    root = f"{DAV}/{token}"
    status, _, body = anon(server, "PROPFIND", root + "/", headers={"Depth": "1"})
    assert status == 207
    text = body.decode()
    assert f"{root}/a.txt" in text and f"{root}/sub/" in text
    assert "secret" not in text and "/remote.php" not in text
    assert anon(server, "GET", root + "/sub/c.txt")[2] == b"sea"
    assert anon(server, "PUT", root + "/a.txt", b"x")[0] == 403
    assert anon(server, "DELETE", root + "/a.txt")[0] == 403
    assert anon(server, "MKCOL", root + "/d")[0] == 403
    assert server.request("GET", ALICE + "/P/a.txt").body == b"alpha"


def test_file_link_root_is_the_file(server: LiveServer) -> None:
    token = make_link(server, "/P/a.txt")
    assert anon(server, "GET", f"{DAV}/{token}")[:3:2] == (200, b"alpha")
    assert anon(server, "GET", f"{DAV}/{token}/x")[0] == 404


def test_unknown_or_missing_token_is_404(server: LiveServer) -> None:
    make_link(server, "/P")
    assert anon(server, "GET", f"{DAV}/not-a-token/a.txt")[0] == 404
    assert anon(server, "PROPFIND", f"{DAV}/", headers={"Depth": "0"})[0] == 404
    assert anon(server, "PROPFIND", DAV, headers={"Depth": "0"})[0] == 404


def test_password_comes_as_basic_password_with_any_user_name(server: LiveServer) -> None:
    token = make_link(server, "/P", password="pw")
    url = f"{DAV}/{token}/a.txt"
    status, headers, _ = anon(server, "GET", url)
    assert status == 401 and headers["www-authenticate"].startswith("Basic ")
    assert anon(server, "GET", url, headers=basic("anonymous", "wrong"))[0] == 401
    assert anon(server, "GET", url, headers=basic("anonymous", "pw"))[:3:2] == (200, b"alpha")
    assert anon(server, "GET", url, headers=basic("", "pw"))[:3:2] == (200, b"alpha")


def test_edit_link_writes_in_the_owners_tree_and_stays_inside(server: LiveServer) -> None:
    token = make_link(server, "/P", mode=LinkMode.EDIT)
    other = make_link(server, "/P/sub", mode=LinkMode.EDIT)
    root = f"{DAV}/{token}"
    assert anon(server, "PUT", root + "/new.txt", b"made")[0] == 201
    assert server.request("GET", ALICE + "/P/new.txt").body == b"made"
    inside = {"Destination": root + "/sub/moved.txt"}
    assert anon(server, "MOVE", root + "/new.txt", headers=inside)[0] == 201
    assert server.request("GET", ALICE + "/P/sub/moved.txt").body == b"made"
    # Another link's URL and the owner's own tree are outside this link.
    for target in (f"{DAV}/{other}/x.txt", ALICE + "/stolen.txt"):
        assert anon(server, "COPY", root + "/a.txt", headers={"Destination": target})[0] == 403
    assert server.request("GET", ALICE + "/stolen.txt").status == 404
    assert anon(server, "DELETE", root + "/")[0] == 403


def test_upload_only_link_takes_files_and_shows_nothing(server: LiveServer) -> None:
    token = make_link(server, "/P", mode=LinkMode.UPLOAD)
    root = f"{DAV}/{token}"
    assert anon(server, "PUT", root + "/drop.txt", b"dropped")[0] == 201
    assert server.request("GET", ALICE + "/P/drop.txt").body == b"dropped"
    assert anon(server, "GET", root + "/drop.txt")[0] == 403
    assert anon(server, "PROPFIND", root + "/", headers={"Depth": "1"})[0] == 403
    assert anon(server, "GET", root + "/")[0] == 403


@pytest.mark.parametrize(
    "rest",
    ["/../secret.txt", "/%2E%2E/secret.txt", "/..%2Fsecret.txt", "/sub/../../secret.txt"],
)
def test_link_cannot_reach_outside_its_folder(server: LiveServer, rest: str) -> None:
    token = make_link(server, "/P")
    status, _, body = anon(server, "GET", f"{DAV}/{token}{rest}")
    assert status in (403, 404) and SECRET not in body


def test_deleted_link_stops_working_at_once(server: LiveServer) -> None:
    token = make_link(server, "/P")
    assert anon(server, "GET", f"{DAV}/{token}/a.txt")[0] == 200
    assert server.services is not None
    with server.services.db.write() as session:
        assert links.delete_link(session, token)
    assert anon(server, "GET", f"{DAV}/{token}/a.txt")[0] == 404


LOCK_BODY = (
    b'<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/>'
    b"</D:lockscope><D:locktype><D:write/></D:locktype>"
    b"<D:owner>link user</D:owner></D:lockinfo>"
)


def test_edit_link_locks_are_the_owners_locks(server: LiveServer) -> None:
    token = make_link(server, "/P", mode=LinkMode.EDIT)
    url = f"{DAV}/{token}/a.txt"
    status, headers, _ = anon(server, "LOCK", url, LOCK_BODY, {"Timeout": "Second-60"})
    assert status == 200
    lock_token = headers["lock-token"]
    # The lock is on alice's file, whichever URL reaches it.
    assert server.request("PUT", ALICE + "/P/a.txt", b"by alice").status == 423
    assert anon(server, "PUT", url, b"no token")[0] == 423
    if_header = {"If": f"({lock_token})"}
    assert anon(server, "PUT", url, b"with token", if_header)[0] == 204
    assert anon(server, "UNLOCK", url, headers={"Lock-Token": lock_token})[0] == 204
    assert server.request("PUT", ALICE + "/P/a.txt", b"by alice").status == 204


def test_read_only_link_cannot_lock(server: LiveServer) -> None:
    token = make_link(server, "/P")
    assert anon(server, "LOCK", f"{DAV}/{token}/a.txt", LOCK_BODY)[0] == 403


def test_edit_link_lock_refresh(server: LiveServer) -> None:
    """litmus locks ``refresh``: a LOCK without body and an If header renews the lock."""
    token = make_link(server, "/P", mode=LinkMode.EDIT)
    url = f"{DAV}/{token}/a.txt"
    status, headers, _ = anon(server, "LOCK", url, LOCK_BODY, {"Timeout": "Second-60"})
    assert status == 200
    lock_token = headers["lock-token"]
    refresh = {"If": f"({lock_token})", "Timeout": "Second-120"}
    status, _, body = anon(server, "LOCK", url, None, refresh)
    assert status == 200, body
    renewed = re.search(rb"<D:timeout>Second-(\d+)</D:timeout>", body)
    assert renewed is not None and 60 < int(renewed.group(1)) <= 120
    assert f"<D:href>{url}</D:href>".encode() in body
