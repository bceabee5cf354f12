"""File drops (upload-only links, Nextcloud's permissions 4) over real HTTP: a drop never
tells what its folder holds.

A name dropped twice lands twice (``a.txt``, ``a (2).txt``), both answered 201; every answer —
PUT, MKCOL, PROPFIND, GET, HEAD and the refused methods — is the same for a name that exists
and one that does not, at both public WebDAV endpoints. A read-write link still overwrites.
"""

from __future__ import annotations

import base64
import re
import socket
import threading
from collections.abc import Callable
from urllib.parse import unquote

import pytest

from oxidav.authz.links.store import LinkMode
from oxidav.tree.drops import MAX_DROP_DEPTH
from tests.support.live import LiveServer
from tests.support.public_links import ALICE, make_link, populate

Ask = Callable[..., tuple[int, bytes]]


@pytest.fixture
def server(live_server: LiveServer) -> LiveServer:
    """alice's /P holds a.txt, <b>&.txt and sub/c.txt (``populate``)."""
    return populate(live_server)


def _asker(server: LiveServer, endpoint: str, token: str) -> tuple[str, Ask]:
    """(root URL, ask) for one of the two public WebDAV endpoints of the link ``token``."""
    if endpoint == "webdav":
        root = "/public.php/webdav"
        auth = "Basic " + base64.b64encode(f"{token}:".encode()).decode()
        extra = {"Authorization": auth}
    else:
        root = f"/public.php/dav/files/{token}"
        extra = {}

    def ask(
        method: str, rest: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        all_headers = {**extra, **(headers or {})}
        resp = server.request(method, root + rest, body, headers=all_headers, user=None)
        return resp.status, resp.body

    return root, ask


def _listing(server: LiveServer, folder: str) -> set[str]:
    resp = server.request("PROPFIND", ALICE + folder, headers={"Depth": "1"})
    assert resp.status == 207
    hrefs = re.findall(r"<d:href>([^<]*)</d:href>", resp.text, flags=re.IGNORECASE)
    names = {unquote(href.rstrip("/").rsplit("/", 1)[-1]) for href in hrefs}
    return names - {folder.rsplit("/", 1)[-1]}


def _alice_reads(server: LiveServer, path: str) -> bytes:
    resp = server.request("GET", ALICE + path)
    assert resp.status == 200, path
    return resp.body


ENDPOINTS = ["webdav", "dav-files"]


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_a_name_dropped_twice_lands_under_two_names(server: LiveServer, endpoint: str) -> None:
    assert server.request("MKCOL", ALICE + "/Drop").status == 201
    _, ask = _asker(server, endpoint, make_link(server, "/Drop", mode=LinkMode.UPLOAD))
    assert ask("PUT", "/a.txt", b"first") == (201, b"")
    assert ask("PUT", "/a.txt", b"second") == (201, b"")
    assert ask("PUT", "/a.txt", b"third") == (201, b"")
    assert _listing(server, "/Drop") == {"a.txt", "a (2).txt", "a (3).txt"}
    assert _alice_reads(server, "/Drop/a.txt") == b"first"
    assert _alice_reads(server, "/Drop/a%20(2).txt") == b"second"
    assert _alice_reads(server, "/Drop/a%20(3).txt") == b"third"


def test_a_drop_into_folders_makes_them_and_never_writes_over_a_file(server: LiveServer) -> None:
    _, ask = _asker(server, "dav-files", make_link(server, "/P", mode=LinkMode.UPLOAD))
    assert ask("MKCOL", "/box") == (201, b"")
    assert ask("PUT", "/box/in.txt", b"in") == (201, b"")
    assert ask("PUT", "/sub/c.txt", b"not sea") == (201, b"")
    assert ask("PUT", "/a.txt/x.txt", b"under a file") == (201, b"")
    assert ask("PUT", "/a.txt/y.txt", b"beside it") == (201, b"")
    assert _alice_reads(server, "/P/box/in.txt") == b"in"
    assert _alice_reads(server, "/P/sub/c.txt") == b"sea"
    assert _alice_reads(server, "/P/sub/c%20(2).txt") == b"not sea"
    assert _alice_reads(server, "/P/a.txt") == b"alpha"
    assert _alice_reads(server, "/P/a.txt%20(2)/x.txt") == b"under a file"
    assert _alice_reads(server, "/P/a.txt%20(2)/y.txt") == b"beside it"


def test_a_drop_is_bounded_in_depth(server: LiveServer) -> None:
    _, ask = _asker(server, "dav-files", make_link(server, "/P", mode=LinkMode.UPLOAD))
    deep = "/d" * (MAX_DROP_DEPTH - 1)
    assert ask("PUT", deep + "/f.txt", b"deep") == (201, b"")
    assert ask("PUT", deep + "/d/f.txt", b"deeper")[0] == 400
    assert _alice_reads(server, "/P" + deep + "/f.txt") == b"deep"
    assert server.request("GET", ALICE + "/P" + deep + "/d").status == 404


_VOLATILE = re.compile(
    rb"(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[^<\s]*|[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} "
    rb"\d\d:\d\d:\d\d GMT|[0-9a-f]{16,})"
)


def _same(answer: tuple[int, bytes]) -> tuple[int, bytes]:
    """An answer without what differs between any two requests (dates, request ids)."""
    return answer[0], _VOLATILE.sub(b"-", answer[1])


_LOCK = (
    b'<?xml version="1.0" encoding="utf-8"?><d:lockinfo xmlns:d="DAV:">'
    b"<d:lockscope><d:exclusive/></d:lockscope><d:locktype><d:write/></d:locktype>"
    b"</d:lockinfo>"
)
_PROPPATCH = (
    b'<?xml version="1.0" encoding="utf-8"?><d:propertyupdate xmlns:d="DAV:" xmlns:x="urn:x">'
    b"<d:set><d:prop><x:note>n</x:note></d:prop></d:set></d:propertyupdate>"
)
#: (method, body, headers) of every probe; COPY and MOVE name a destination inside the link.
_PROBES: list[tuple[str, bytes | None, dict[str, str]]] = [
    ("GET", None, {}),
    ("HEAD", None, {}),
    ("PROPFIND", None, {"Depth": "0"}),
    ("PROPFIND", None, {"Depth": "1"}),
    ("MKCOL", None, {}),
    ("DELETE", None, {}),
    ("LOCK", _LOCK, {"Content-Type": "application/xml"}),
    ("PROPPATCH", _PROPPATCH, {"Content-Type": "application/xml"}),
    ("OPTIONS", None, {}),
]
#: Pairs of (a path that exists in alice's /P, one that does not, shaped alike).
_PAIRS = [
    ("/a.txt", "/zz.txt"),
    ("/sub", "/nosub"),
    ("/sub/c.txt", "/nosub/c.txt"),
    ("/sub/c.txt", "/sub/zz.txt"),
    ("/a.txt/x", "/zz.txt/x"),
]


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_no_answer_tells_whether_a_name_exists(server: LiveServer, endpoint: str) -> None:
    root, ask = _asker(server, endpoint, make_link(server, "/P", mode=LinkMode.UPLOAD))
    for there, missing in _PAIRS:
        for method, body, headers in _PROBES:
            seen = _same(ask(method, there, body, headers))
            unseen = _same(ask(method, missing, body, headers))
            assert seen == unseen, (method, there, missing, seen, unseen)
        for method in ("COPY", "MOVE"):
            headers = {"Destination": root + "/elsewhere.txt"}
            assert ask(method, there, None, headers) == ask(method, missing, None, headers)
            headers = {"Destination": root + there}
            assert ask(method, "/zz.txt", None, headers) == ask(method, "/a.txt", None, headers)
    for there, missing in _PAIRS:
        seen, unseen = ask("PUT", there, b"dropped"), ask("PUT", missing, b"dropped")
        assert seen == unseen == (201, b""), (there, missing)
        assert ask("PUT", there, b"x", {"If-Match": "*"}) == ask(
            "PUT", missing, b"x", {"If-Match": "*"}
        )
        assert ask("PUT", there, b"x", {"If-None-Match": "*"})[0] == 201
    assert _alice_reads(server, "/P/a.txt") == b"alpha"
    assert _alice_reads(server, "/P/sub/c.txt") == b"sea"


def test_the_root_answers_alike_whatever_the_folder_holds(server: LiveServer) -> None:
    """The link's own folder is always there: its depth-0 PROPFIND is allowed, a listing and a
    download never."""
    assert server.request("MKCOL", ALICE + "/Empty").status == 201
    _, full = _asker(server, "dav-files", make_link(server, "/P", mode=LinkMode.UPLOAD))
    _, empty = _asker(server, "dav-files", make_link(server, "/Empty", mode=LinkMode.UPLOAD))
    for method, headers in (("PROPFIND", {"Depth": "1"}), ("GET", {}), ("HEAD", {})):
        assert full(method, "/", None, headers)[0] == empty(method, "/", None, headers)[0] == 403
    assert full("PROPFIND", "/", None, {"Depth": "0"})[0] == 207
    assert full("PUT", "/", b"x")[0] == empty("PUT", "/", b"x")[0] == 405


_ROOT_PROPS = (
    b'<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns">'
    b"<d:prop><d:getetag/><d:getlastmodified/><d:quota-used-bytes/><oc:size/>"
    b"<d:getcontentlength/></d:prop></d:propfind>"
)


def test_the_roots_properties_do_not_move_with_what_it_holds(server: LiveServer) -> None:
    _, ask = _asker(server, "dav-files", make_link(server, "/P", mode=LinkMode.UPLOAD))
    before = ask("PROPFIND", "/", _ROOT_PROPS, {"Depth": "0"})
    assert before[0] == 207 and b"<D:quota-used-bytes>0<" in before[1]
    assert server.request("PUT", ALICE + "/P/sub/more.txt", b"more bytes").status == 201
    assert ask("PUT", "/dropped.txt", b"dropped")[0] == 201
    assert ask("PROPFIND", "/", _ROOT_PROPS, {"Depth": "0"}) == before


def _start_put(server: LiveServer, path: str, body: bytes) -> socket.socket:
    """A PUT whose head and all but the last byte of its body are sent (the server is then
    reading the body, past every decision)."""
    conn = socket.create_connection(("127.0.0.1", server.port), timeout=60)
    head = (
        f"PUT {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    conn.sendall(head + body[:-1])
    return conn


def _finish_put(conn: socket.socket, last: bytes, statuses: list[int]) -> None:
    with conn:
        conn.sendall(last)
        reply = b""
        while b"\r\n" not in reply:
            data = conn.recv(4096)
            if not data:
                break
            reply += data
        statuses.append(int(reply.split(b" ", 2)[1]))


def test_concurrent_drops_of_one_name_both_land(server: LiveServer) -> None:
    assert server.request("MKCOL", ALICE + "/Drop").status == 201
    token = make_link(server, "/Drop", mode=LinkMode.UPLOAD)
    url = f"/public.php/dav/files/{token}/same.txt"
    bodies = [b"A" * 200_000, b"B" * 200_000]
    conns = [_start_put(server, url, body) for body in bodies]
    statuses: list[int] = []
    threads = [
        threading.Thread(target=_finish_put, args=(conn, body[-1:], statuses))
        for conn, body in zip(conns, bodies, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert statuses == [201, 201]
    assert _listing(server, "/Drop") == {"same.txt", "same (2).txt"}
    landed = {_alice_reads(server, "/Drop/same.txt"), _alice_reads(server, "/Drop/same%20(2).txt")}
    assert landed == set(bodies)


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_a_read_write_link_still_overwrites(server: LiveServer, endpoint: str) -> None:
    _, ask = _asker(server, endpoint, make_link(server, "/P", mode=LinkMode.EDIT))
    assert ask("PUT", "/a.txt", b"edited")[0] == 204
    assert _alice_reads(server, "/P/a.txt") == b"edited"
    assert ask("MKCOL", "/sub")[0] == 405
    assert "a (2).txt" not in _listing(server, "/P")
