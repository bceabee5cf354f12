"""The Nextcloud middleware over HTTP: OC-* headers, X-OC-Mtime, OC-Checksum, 207 type,
PROPFIND enrichment, and the favorites REPORT."""

from __future__ import annotations

import hashlib
import re

from oxidav.nextcloud.context import nextcloud_context
from oxidav.nextcloud.favorites import set_favorite
from tests.support.live import LiveServer
from tests.support.nextcloud import node_at, user_id

FILES = "/remote.php/dav/files/alice"
PROPFIND = (
    '<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns" '
    'xmlns:nc="http://nextcloud.org/ns"><d:prop><d:resourcetype/><d:getetag/><oc:id/>'
    "<oc:fileid/><oc:permissions/><oc:size/><oc:checksums/><oc:favorite/><oc:share-types/>"
    "<oc:data-fingerprint/><oc:owner-id/><nc:has-preview/></d:prop></d:propfind>"
)


def test_put_headers_and_mtime(live_server: LiveServer) -> None:
    data = b"hello"
    resp = live_server.request(
        "PUT",
        f"{FILES}/a.txt",
        data,
        headers={
            "OC-Checksum": "SHA1:" + hashlib.sha1(data).hexdigest(),
            "X-OC-Mtime": "1500000000",
        },
    )
    assert resp.status == 201
    assert re.fullmatch(r"\d{8}" + live_server.settings.instance_id, resp.headers["oc-fileid"])
    assert resp.headers["oc-etag"] == resp.headers["etag"]
    assert resp.headers["x-oc-mtime"] == "accepted"
    mkcol = live_server.request("MKCOL", f"{FILES}/dir", headers={"X-OC-Mtime": "1400000000"})
    assert mkcol.status == 201 and mkcol.headers["oc-fileid"] and mkcol.headers["oc-etag"]
    assert live_server.services is not None
    context = nextcloud_context(live_server.services)
    folder = node_at(context.db, user_id(context.db, "alice"), "/dir")
    assert folder is not None and int(folder.mtime.timestamp()) == 1400000000
    move = live_server.request("MOVE", f"{FILES}/a.txt", headers={"Destination": f"{FILES}/dir/b"})
    assert move.status == 201
    assert move.headers["oc-fileid"] == resp.headers["oc-fileid"]  # stable across MOVE
    copy = live_server.request("COPY", f"{FILES}/dir/b", headers={"Destination": f"{FILES}/c"})
    assert copy.status == 201 and copy.headers["oc-fileid"] != resp.headers["oc-fileid"]


def test_checksum_mismatch_stores_nothing(live_server: LiveServer) -> None:
    resp = live_server.request(
        "PUT", f"{FILES}/bad.txt", b"hello", headers={"OC-Checksum": "SHA1:" + "0" * 40}
    )
    assert resp.status == 400
    assert live_server.request("GET", f"{FILES}/bad.txt").status == 404
    live_server.request("PUT", f"{FILES}/keep.txt", b"old")
    resp = live_server.request(
        "PUT", f"{FILES}/keep.txt", b"new", headers={"OC-Checksum": "MD5:" + "1" * 32}
    )
    assert resp.status == 400
    assert live_server.request("GET", f"{FILES}/keep.txt").body == b"old"
    md5 = hashlib.md5(b"new").hexdigest()
    ok = live_server.request(
        "PUT", f"{FILES}/keep.txt", b"new", headers={"OC-Checksum": f"MD5:{md5}"}
    )
    assert ok.status == 204
    bad_hex = live_server.request(
        "PUT", f"{FILES}/k2", b"x", headers={"OC-Checksum": "SHA1:not-hex"}
    )
    assert bad_hex.status == 400


def test_bad_mtime_is_400(live_server: LiveServer) -> None:
    resp = live_server.request("PUT", f"{FILES}/m", b"x", headers={"X-OC-Mtime": "yesterday"})
    assert resp.status == 400
    assert live_server.request("GET", f"{FILES}/m").status == 404


def test_propfind_enriched(live_server: LiveServer) -> None:
    live_server.request("PUT", f"{FILES}/a.txt", b"hello")
    resp = live_server.request("PROPFIND", f"{FILES}/", PROPFIND, headers={"Depth": "1"})
    assert resp.status == 207
    assert resp.headers["content-type"] == "application/xml; charset=utf-8"
    text = resp.text
    assert re.search(r"permissions>RGDNVCK<", text) and re.search(r"permissions>RGDNVW<", text)
    assert re.search(r":id>\d{8}" + live_server.settings.instance_id + "<", text)
    assert "data-fingerprint></" in text or "data-fingerprint/>" in text
    assert "owner-id>alice<" in text and "has-preview>false<" in text


def test_favorites_report(live_server: LiveServer) -> None:
    live_server.request("MKCOL", f"{FILES}/d")
    live_server.request("PUT", f"{FILES}/d/star.txt", b"*")
    live_server.request("PUT", f"{FILES}/plain.txt", b"-")
    assert live_server.services is not None
    context = nextcloud_context(live_server.services)
    uid = user_id(context.db, "alice")
    node = node_at(context.db, uid, "/d/star.txt")
    assert node is not None
    with context.db.write() as session:
        set_favorite(session, uid, node.id, True)
    body = (
        '<?xml version="1.0"?><oc:filter-files xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns">'
        "<d:prop><oc:fileid/><oc:favorite/></d:prop>"
        "<oc:filter-rules><oc:favorite>1</oc:favorite></oc:filter-rules></oc:filter-files>"
    )
    resp = live_server.request("REPORT", f"{FILES}/", body)
    assert resp.status == 207, resp.text
    hrefs = re.findall(r"<D:href>([^<]+)</D:href>", resp.text)
    assert hrefs == [f"{FILES}/d/star.txt"]
    assert f"fileid>{node.id}<" in resp.text and "favorite>1<" in resp.text
    no_rule = body.replace("<oc:favorite>1</oc:favorite>", "")
    assert live_server.request("REPORT", f"{FILES}/", no_rule).status == 400
    assert live_server.request("REPORT", f"{FILES}/", body, user="bob").status == 404


def test_proppatch_favorite(live_server: LiveServer) -> None:
    live_server.request("PUT", f"{FILES}/f", b"f")
    patch = (
        '<?xml version="1.0"?><d:propertyupdate xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns">'
        "<d:set><d:prop><oc:favorite>1</oc:favorite></d:prop></d:set></d:propertyupdate>"
    )
    assert live_server.request("PROPPATCH", f"{FILES}/f", patch).status == 207
    assert live_server.services is not None
    context = nextcloud_context(live_server.services)
    uid = user_id(context.db, "alice")
    node = node_at(context.db, uid, "/f")
    assert node is not None
    from oxidav.nextcloud.favorites import favorite_ids

    with context.db.read() as session:
        assert favorite_ids(session, uid, [node.id]) == {node.id}
