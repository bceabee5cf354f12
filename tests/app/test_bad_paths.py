"""A request path that is not UTF-8 is a clear 400 (it used to end the connection unanswered)."""

from __future__ import annotations

import base64
import http.client
import logging
import socket

import pytest

from tests.support.live import LiveServer


@pytest.mark.parametrize(
    "path",
    [
        "/remote.php/dav/files/alice/%C3%28",
        "/remote.php/webdav/%FF.txt",
        "/public.php/dav/files/token/%C3",
        "/s/%E2%82",
        "/ocs/v2.php/cloud/user%C0%AF",
    ],
)
def test_a_path_that_is_not_utf8_is_400(
    live_server: LiveServer, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="oxidav.requests")
    for method in ("GET", "PROPFIND", "PUT"):
        response = live_server.request(method, path, b"" if method == "PUT" else None)
        assert response.status == 400, (method, path, response.status)
        assert b"not valid UTF-8" in response.body
    assert any("not UTF-8" in r.getMessage() for r in caplog.records)
    # The server still answers the next request.
    next_one = live_server.request("PROPFIND", "/remote.php/dav/files/alice/", None, {"Depth": "0"})
    assert next_one.status == 207


def test_raw_latin1_bytes_in_the_path_are_400(live_server: LiveServer) -> None:
    with socket.create_connection(("127.0.0.1", live_server.port), timeout=10) as conn:
        conn.sendall(b"GET /remote.php/dav/files/alice/caf\xe9 HTTP/1.1\r\nHost: x\r\n\r\n")
        head = conn.recv(1024)
    assert head.startswith(b"HTTP/1.1 400"), head


def _exchange(conn: socket.socket, request: bytes) -> http.client.HTTPResponse:
    """Send ``request`` on ``conn`` and read one answer, framed by its own headers."""
    conn.sendall(request)
    response = http.client.HTTPResponse(conn)
    response.begin()
    return response


CLIMBING = "/remote.php/dav/files/alice/x/" + "%2e%2e/" * 6 + "etc/passwd"


@pytest.mark.parametrize("path", [CLIMBING, "/s/token/../../../etc/passwd", "/.."])
def test_a_path_climbing_above_the_root_is_a_framed_400(live_server: LiveServer, path: str) -> None:
    """The 400 carries the body its Content-Length declares (WsgiDAV's declared 475 bytes and
    sent none: a keep-alive client hung), and the connection serves the next request."""
    auth = "Basic " + base64.b64encode(b"alice:secret").decode()
    head = f"Host: x\r\nAuthorization: {auth}\r\n\r\n"
    with socket.create_connection(("127.0.0.1", live_server.port), timeout=10) as conn:
        refused = _exchange(conn, f"GET {path} HTTP/1.1\r\n{head}".encode())
        body = refused.read()
        assert refused.status == 400
        assert int(refused.headers["Content-Length"]) == len(body)
        assert b"climbs above the root" in body
        propfind = f"PROPFIND /remote.php/dav/files/alice/ HTTP/1.1\r\nDepth: 0\r\n{head}"
        again = _exchange(conn, propfind.encode())
        assert again.status == 207
        again.read()


def test_a_head_of_a_climbing_path_is_a_400_without_a_body(live_server: LiveServer) -> None:
    """HEAD gets the 400's status and headers only; the next request on the connection reads
    its own answer, not the refusal's text."""
    auth = "Basic " + base64.b64encode(b"alice:secret").decode()
    head = f"Host: x\r\nAuthorization: {auth}\r\n\r\n"
    with socket.create_connection(("127.0.0.1", live_server.port), timeout=10) as conn:
        conn.sendall(f"HEAD /remote.php/webdav/../../.. HTTP/1.1\r\n{head}".encode())
        refused = http.client.HTTPResponse(conn, method="HEAD")
        refused.begin()
        assert refused.status == 400
        refused.read()
        propfind = f"PROPFIND /remote.php/dav/files/alice/ HTTP/1.1\r\nDepth: 0\r\n{head}"
        again = _exchange(conn, propfind.encode())
        assert again.status == 207
        again.read()


def test_dot_segments_below_the_root_are_resolved(live_server: LiveServer) -> None:
    assert live_server.request("PUT", "/remote.php/dav/files/alice/a.txt", b"a").status == 201
    got = live_server.request("GET", "/remote.php/dav/files/alice/x/../a.txt")
    assert (got.status, got.body) == (200, b"a")
    # bob's tree through alice's: resolved first, then refused as bob's tree would be.
    other = live_server.request("GET", "/remote.php/dav/files/alice/../bob/a.txt")
    assert other.status == 404
