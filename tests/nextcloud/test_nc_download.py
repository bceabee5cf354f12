"""GET/HEAD of a file carry the stored ``OC-Checksum`` and ``OC-ETag`` (docs/nextcloud-protocol.md
A.9); a partial (206) answer carries no whole-file checksum."""

from __future__ import annotations

import hashlib

from tests.support.live import LiveServer

FILE = "/remote.php/dav/files/alice/sum.txt"


def test_get_and_head_serve_the_checksum(live_server: LiveServer) -> None:
    s = live_server
    data = b"checksummed content\n" * 10
    checksum = f"SHA1:{hashlib.sha1(data).hexdigest()}"
    put = s.request("PUT", FILE, body=data, headers={"OC-Checksum": checksum})
    assert put.status == 201
    for method in ("GET", "HEAD"):
        response = s.request(method, FILE)
        assert response.status == 200
        assert response.headers["oc-checksum"] == checksum
        assert response.headers["oc-etag"] == response.headers["etag"] == put.headers["oc-etag"]
    partial = s.request("GET", FILE, headers={"Range": "bytes=0-3"})
    assert partial.status == 206 and "oc-checksum" not in partial.headers
    plain = "/remote.php/dav/files/alice/plain.txt"
    assert s.request("PUT", plain, body=b"no checksum").status == 201
    assert "oc-checksum" not in s.request("GET", plain).headers
