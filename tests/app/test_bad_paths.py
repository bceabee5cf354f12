"""A request path that is not UTF-8 is a clear 400 (it used to end the connection unanswered)."""

from __future__ import annotations

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
