"""The files provider over real HTTP (both backends): PUT/GET, etags, ranges, conditionals,
short bodies, chunked bodies, PROPFIND depth, quotas, other users, names."""

from __future__ import annotations

import http.client
import unicodedata

import pytest

from oxidav.authz.authn import accounts
from oxidav.blobs.fsck import check
from oxidav.db.models.users import User
from tests.support.files import AUTH, FILES, propfind_props, raw_request, url
from tests.support.live import LiveServer

NAMED = (
    b'<?xml version="1.0"?><d:propfind xmlns:d="DAV:"><d:prop><d:getetag/>'
    b"<d:getcontentlength/><d:resourcetype/><d:quota-used-bytes/>"
    b"<d:quota-available-bytes/></d:prop></d:propfind>"
)


def put(server: LiveServer, path: str, body: bytes, **headers: str) -> int:
    return server.request("PUT", url(path), body, headers=headers).status


def test_put_get_and_quoted_etag(live_server: LiveServer) -> None:
    assert live_server.request("MKCOL", url("/docs")).status == 201
    created = live_server.request("PUT", url("/docs/a.txt"), b"hello")
    assert created.status == 201
    replaced = live_server.request("PUT", url("/docs/a.txt"), b"hello world")
    assert replaced.status == 204
    got = live_server.request("GET", url("/docs/a.txt"))
    assert got.status == 200 and got.body == b"hello world"
    assert got.headers["etag"] == replaced.headers["etag"] != created.headers["etag"]
    assert got.headers["accept-ranges"] == "bytes"
    listing = live_server.request("PROPFIND", url("/docs/"), NAMED, headers={"Depth": "1"})
    props = propfind_props(listing.body)
    assert props[url("/docs/a.txt")]["{DAV:}getetag"] == got.headers["etag"]
    assert props[url("/docs/a.txt")]["{DAV:}getcontentlength"] == "11"
    assert "{DAV:}quota-used-bytes" not in props[url("/docs/a.txt")]
    assert props[url("/docs/")]["{DAV:}quota-used-bytes"] == "11"
    assert props[url("/docs/")]["{DAV:}quota-available-bytes"] == "-3"  # unlimited


def test_options_advertises_class_3(live_server: LiveServer) -> None:
    response = live_server.request("OPTIONS", url("/"))
    classes = [t.strip() for t in response.headers["dav"].split(",")]
    assert classes[:3] == ["1", "2", "3"]
    assert "LOCK" in response.headers["allow"]


def test_get_of_a_folder_says_what_the_url_is(live_server: LiveServer) -> None:
    """Some clients check a WebDAV URL with a GET (Nextcloud answers them 200 too): a folder
    answers a short text, never a listing; a missing or foreign folder stays 404."""
    assert live_server.request("MKCOL", url("/docs")).status == 201
    assert put(live_server, "/docs/secret-name.txt", b"x") == 201
    for path in (url("/"), url("/docs/"), url("/docs"), "/remote.php/webdav/", "/remote.php/dav/"):
        got = live_server.request("GET", path)
        assert got.status == 200, path
        assert got.headers["content-type"] == "text/plain; charset=utf-8"
        assert b"WebDAV" in got.body and b"secret-name" not in got.body
        head = live_server.request("HEAD", path)
        assert head.status == 200 and head.body == b""
        assert head.headers["content-length"] == str(len(got.body))
    assert live_server.request("GET", url("/missing/")).status == 404
    live_server.request("MKCOL", "/remote.php/dav/files/bob/private", user="bob")
    assert live_server.request("GET", "/remote.php/dav/files/bob/private/").status == 404
    # WsgiDAV's rules for GET still hold: Depth other than 0 is 400, a body is 415.
    assert live_server.request("GET", url("/docs/"), headers={"Depth": "1"}).status == 400
    assert live_server.request("GET", url("/docs/"), b"body").status == 415
    # Conditions are evaluated on the folder: its etag, its locks.
    etag = propfind_props(
        live_server.request("PROPFIND", url("/docs/"), NAMED, headers={"Depth": "0"}).body
    )[url("/docs/")]["{DAV:}getetag"]
    assert live_server.request("GET", url("/docs/"), headers={"If-Match": '"other"'}).status == 412
    assert live_server.request("GET", url("/docs/"), headers={"If-Match": etag}).status == 200


def test_folder_etags_roll_up(live_server: LiveServer) -> None:
    for folder in ("/a", "/a/b", "/other"):
        live_server.request("MKCOL", url(folder))

    def etags() -> dict[str, str]:
        body = live_server.request("PROPFIND", url("/"), NAMED, headers={"Depth": "1"}).body
        return {h: p["{DAV:}getetag"] for h, p in propfind_props(body).items()}

    before = etags()
    assert put(live_server, "/a/b/f", b"x") == 201
    after = etags()
    assert after[url("/")] != before[url("/")]
    assert after[url("/a/")] != before[url("/a/")]
    assert after[url("/other/")] == before[url("/other/")]


def test_ranges(live_server: LiveServer) -> None:
    data = bytes(range(256)) * 40
    put(live_server, "/r.bin", data)
    one = live_server.request("GET", url("/r.bin"), headers={"Range": "bytes=10-19"})
    assert one.status == 206 and one.body == data[10:20]
    assert one.headers["content-range"] == f"bytes 10-19/{len(data)}"
    suffix = live_server.request("GET", url("/r.bin"), headers={"Range": "bytes=-5"})
    assert suffix.body == data[-5:]
    multi = live_server.request("GET", url("/r.bin"), headers={"Range": "bytes=0-1,100-103"})
    assert multi.status == 206
    ctype = multi.headers["content-type"]
    assert ctype.startswith("multipart/byteranges; boundary=")
    assert int(multi.headers["content-length"]) == len(multi.body)
    boundary = ctype.split("boundary=")[1].encode()
    parts = multi.body.split(b"--" + boundary)
    assert parts[1].endswith(b"\r\n\r\n" + data[0:2] + b"\r\n")
    assert b"Content-Range: bytes 100-103/10240" in parts[2]
    assert parts[2].endswith(data[100:104] + b"\r\n")
    assert parts[3] == b"--\r\n"
    bad = live_server.request("GET", url("/r.bin"), headers={"Range": "bytes=999999-"})
    assert bad.status == 416 and bad.headers["content-range"] == f"bytes */{len(data)}"
    stale = live_server.request(
        "GET", url("/r.bin"), headers={"Range": "bytes=0-1", "If-Range": '"stale"'}
    )
    assert stale.status == 200 and stale.body == data
    head = live_server.request("HEAD", url("/r.bin"), headers={"Range": "bytes=0-9"})
    assert head.status == 206 and head.body == b""


def test_conditionals(live_server: LiveServer) -> None:
    etag = live_server.request("PUT", url("/c.txt"), b"v1").headers["etag"]
    assert live_server.request("GET", url("/c.txt"), headers={"If-None-Match": etag}).status == 304
    assert live_server.request("GET", url("/c.txt"), headers={"If-Match": '"x"'}).status == 412
    assert put(live_server, "/c.txt", b"v2", **{"If-Match": '"nope"'}) == 412
    assert put(live_server, "/c.txt", b"v2", **{"If-None-Match": "*"}) == 412
    assert put(live_server, "/missing.txt", b"v2", **{"If-Match": etag}) == 412
    assert live_server.request("GET", url("/missing.txt")).status == 404
    assert put(live_server, "/c.txt", b"v2", **{"If-Match": etag}) == 204
    assert put(live_server, "/new.txt", b"n", **{"If-None-Match": "*"}) == 201
    assert live_server.request("GET", url("/c.txt")).body == b"v2"


def test_short_body_keeps_previous_version_and_creates_nothing(live_server: LiveServer) -> None:
    put(live_server, "/keep.txt", b"old content")
    for path in ("/keep.txt", "/never.txt"):
        head = (
            f"PUT {url(path)} HTTP/1.1\nHost: 127.0.0.1\nAuthorization: {AUTH}\n"
            "Content-Length: 100000"
        )
        raw_request(live_server.port, head, b"x" * 1000)
    assert live_server.request("GET", url("/keep.txt")).body == b"old content"
    assert live_server.request("GET", url("/never.txt")).status == 404
    # A chunked body cut off before its last chunk leaves nothing either.
    head = (
        f"PUT {url('/cut.txt')} HTTP/1.1\nHost: 127.0.0.1\nAuthorization: {AUTH}\n"
        "Transfer-Encoding: chunked"
    )
    raw_request(live_server.port, head, b"5\r\nhello\r\n5\r\nwor")
    assert live_server.request("GET", url("/cut.txt")).status == 404


def test_chunked_bodies(live_server: LiveServer) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", live_server.port, timeout=30)
    body = iter([b"chunk one, ", b"chunk two"])
    conn.request(
        "PUT", url("/chunked.txt"), body=body, headers={"Authorization": AUTH}, encode_chunked=True
    )
    assert conn.getresponse().status == 201
    conn.close()
    assert live_server.request("GET", url("/chunked.txt")).body == b"chunk one, chunk two"
    # A chunked PROPFIND body is read, not taken for allprop.
    conn = http.client.HTTPConnection("127.0.0.1", live_server.port, timeout=30)
    conn.request(
        "PROPFIND",
        url("/chunked.txt"),
        body=iter([NAMED[:40], NAMED[40:]]),
        headers={"Authorization": AUTH, "Depth": "0"},
        encode_chunked=True,
    )
    response = conn.getresponse()
    props = propfind_props(response.read())
    conn.close()
    assert set(props[url("/chunked.txt")]) == {
        "{DAV:}getetag",
        "{DAV:}getcontentlength",
        "{DAV:}resourcetype",
    }


def test_propfind_depth_infinity_refused(live_server: LiveServer) -> None:
    for headers in ({"Depth": "infinity"}, {}):
        response = live_server.request("PROPFIND", url("/"), headers=headers)
        assert response.status == 403
        assert b"propfind-finite-depth" in response.body
    assert live_server.request("PROPFIND", url("/"), headers={"Depth": "1"}).status == 207


def test_quota_exceeded_is_507_and_stores_nothing(live_server: LiveServer) -> None:
    assert live_server.services is not None
    db = live_server.services.db
    with db.write() as session:
        session.query(User).filter(User.username == "alice").update({"quota_bytes": 100})
    assert put(live_server, "/fits", b"x" * 60) == 201
    response = live_server.request("PUT", url("/too-big"), b"x" * 50)
    assert response.status == 507
    assert b"quota-not-exceeded" in response.body
    assert live_server.request("GET", url("/too-big")).status == 404
    # Chunked (no declared length): refused at commit, nothing stored.
    conn = http.client.HTTPConnection("127.0.0.1", live_server.port, timeout=30)
    conn.request(
        "PUT",
        url("/chunked-big"),
        body=iter([b"y" * 50]),
        headers={"Authorization": AUTH},
        encode_chunked=True,
    )
    assert conn.getresponse().status == 507
    conn.close()
    assert live_server.request("GET", url("/chunked-big")).status == 404
    props = propfind_props(
        live_server.request("PROPFIND", url("/"), NAMED, headers={"Depth": "0"}).body
    )[url("/")]
    assert props["{DAV:}quota-used-bytes"] == "60"
    assert props["{DAV:}quota-available-bytes"] == "40"


def test_other_users_tree_is_not_found(live_server: LiveServer) -> None:
    bob = "/remote.php/dav/files/bob/"
    live_server.request("PUT", bob + "b.txt", b"bob's", user="bob")
    put(live_server, "/mine.txt", b"alice's")
    assert live_server.request("GET", bob + "b.txt").status == 404
    assert live_server.request("PROPFIND", bob, headers={"Depth": "0"}).status == 404
    assert live_server.request("PUT", bob + "x.txt", b"intruder").status == 404
    for method in ("COPY", "MOVE"):
        response = live_server.request(
            method, url("/mine.txt"), headers={"Destination": bob + "stolen.txt"}
        )
        assert response.status == 404
    assert live_server.request("GET", bob + "stolen.txt", user="bob").status == 404
    assert live_server.request("GET", url("/mine.txt")).status == 200


@pytest.mark.parametrize(
    "name", ["a b.txt", "#hash", "q?uestion", "plus+sign", "and&amp", "100%", "Ünïcødé ✓.txt"]
)
def test_names_round_trip(live_server: LiveServer, name: str) -> None:
    assert put(live_server, "/" + name, name.encode()) == 201
    assert live_server.request("GET", url("/" + name)).body == name.encode()
    listing = live_server.request("PROPFIND", url("/"), headers={"Depth": "1"})
    assert url("/" + name) in propfind_props(listing.body)


def test_nfd_names_name_the_nfc_node(live_server: LiveServer) -> None:
    nfc = "café.txt"
    nfd = unicodedata.normalize("NFD", nfc)
    assert put(live_server, "/" + nfd, b"x") == 201
    assert live_server.request("GET", url("/" + nfc)).body == b"x"
    assert put(live_server, "/" + nfc, b"y") == 204
    listing = propfind_props(live_server.request("PROPFIND", url("/"), headers={"Depth": "1"}).body)
    assert url("/" + nfc) in listing and url("/" + nfd) not in listing


def test_paths_cannot_escape_the_root(live_server: LiveServer) -> None:
    live_server.request("PUT", "/remote.php/dav/files/bob/secret.txt", b"s", user="bob")
    for path in (
        FILES + "/../bob/secret.txt",
        FILES + "/%2E%2E/bob/secret.txt",
        FILES + "/..%2Fbob%2Fsecret.txt",
        FILES + "/x/../../bob/secret.txt",
    ):
        response = live_server.request("GET", path)
        assert response.status in (400, 404), path
        assert response.body != b"s"
    # cheroot keeps an encoded slash encoded, so it is part of one name: it never leaves the
    # folder, and the href the server lists for it leads back to the same file.
    live_server.request("MKCOL", url("/d"))
    assert live_server.request("PUT", FILES + "/d%2Fe.txt", b"odd").status == 201
    assert live_server.request("GET", url("/d/e.txt")).status == 404
    listing = propfind_props(live_server.request("PROPFIND", url("/"), headers={"Depth": "1"}).body)
    (href,) = [h for h in listing if "e.txt" in h]
    assert live_server.request("GET", href).body == b"odd"


def test_a_name_that_cannot_exist_is_400_with_its_reason(live_server: LiveServer) -> None:
    """Creating a node under an invalid name (longer than 255 characters) answers 400 and
    says why, whichever method would create it; reading it is simply not found."""
    too_long = "a" * 256
    assert put(live_server, "/f.txt", b"kept") == 201
    lockinfo = (
        b'<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/>'
        b"</D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>"
    )
    destination = {"Destination": "http://127.0.0.1" + url("/" + too_long)}
    for method, body, headers in (
        ("PUT", b"x", {}),
        ("MKCOL", None, {}),
        ("LOCK", lockinfo, {}),
        ("COPY", None, destination),
        ("MOVE", None, destination),
    ):
        target = url("/f.txt") if method in ("COPY", "MOVE") else url("/" + too_long)
        response = live_server.request(method, target, body, headers=headers)
        assert response.status == 400, method
        assert b"longer than 255 characters" in response.body, method
    assert live_server.request("GET", url("/f.txt")).body == b"kept"
    assert live_server.request("GET", url("/" + too_long)).status == 404
    assert put(live_server, "/" + "a" * 255, b"fits") == 201
    # Below a missing folder it is still 409, in another user's tree still 404.
    assert put(live_server, "/missing/x.txt", b"x") == 409
    bob = "/remote.php/dav/files/bob/" + too_long
    assert live_server.request("PUT", bob, b"x").status == 404


def test_app_password_and_legacy_webdav_alias(live_server: LiveServer) -> None:
    assert live_server.services is not None
    token = accounts.create_app_password(live_server.services.db, "alice", "t")
    response = live_server.request("PUT", "/remote.php/webdav/legacy.txt", b"L", password=token)
    assert response.status == 201
    assert live_server.request("GET", url("/legacy.txt")).body == b"L"
    listing = live_server.request("PROPFIND", "/remote.php/webdav/", headers={"Depth": "1"})
    assert "/remote.php/webdav/legacy.txt" in propfind_props(listing.body)


def test_propfind_infinity_allowed_up_to_the_limit(db_url: str, tmp_path) -> None:
    from tests.support.live import in_process_server, make_settings

    settings = make_settings(tmp_path / "data", db_url, propfind_infinity_limit=5)
    with in_process_server(settings) as server:
        server.request("MKCOL", url("/a"))
        server.request("PUT", url("/a/f"), b"x")
        response = server.request("PROPFIND", url("/"), headers={"Depth": "infinity"})
        assert response.status == 207
        assert set(propfind_props(response.body)) == {url("/"), url("/a/"), url("/a/f")}
        for i in range(5):
            server.request("PUT", url(f"/a/g{i}"), b"x")
        assert server.request("PROPFIND", url("/"), headers={"Depth": "infinity"}).status == 403
        assert server.request("PROPFIND", url("/a/g1"), headers={}).status == 207


def test_small_files_live_in_the_database_and_larger_ones_in_the_store(
    live_server: LiveServer,
) -> None:
    """A PUT of a content up to ``blob_inline_max`` keeps it in its chunk's row, committed
    with the node (``oxidav.blobs.inline``); a larger one is a synced blob. Both read back
    whole and by range, an overwrite switches between them, and fsck finds nothing."""
    assert live_server.services is not None
    services = live_server.services
    store = services.blobs.store
    small = bytes(range(256)) * 16  # 4 KiB
    large = bytes(range(251)) * 100  # 25 100 bytes: over the 16 KiB default
    assert put(live_server, "/small.bin", small) == 201
    assert list(store.iter_keys()) == []
    got = live_server.request("GET", url("/small.bin"))
    assert got.status == 200 and got.body == small
    part = live_server.request("GET", url("/small.bin"), headers={"Range": "bytes=100-199"})
    assert part.status == 206 and part.body == small[100:200]
    assert put(live_server, "/small.bin", large) == 204
    assert len(list(store.iter_keys())) == 1
    assert live_server.request("GET", url("/small.bin")).body == large
    assert put(live_server, "/small.bin", small[:5]) == 204
    assert live_server.request("GET", url("/small.bin")).body == small[:5]
    assert (
        live_server.request(
            "COPY", url("/small.bin"), headers={"Destination": url("/copy.bin")}
        ).status
        == 201
    )
    assert live_server.request("GET", url("/copy.bin")).body == small[:5]
    report = check(services.db, store, deep=True)
    assert report.clean, list(report.lines())
