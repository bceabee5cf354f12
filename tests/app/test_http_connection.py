"""Responses written straight to the socket (``DirectSocketConnection``), over real HTTP: large
bodies byte-equal, keep-alive across GET, HEAD, ranges and chunked replies, and clients that go
away mid-GET do not hold the server's threads; ``memoryview`` bodies only through oxidav's own
gateway (SQLite + PG)."""

from __future__ import annotations

import base64
import http.client
import os
import socket
import struct
from typing import Any
from wsgiref.util import setup_testing_defaults
from wsgiref.validate import validator

from oxidav.app import make_app
from tests.support.live import LiveServer

FILE = "/remote.php/dav/files/alice/big.bin"
AUTH = {"Authorization": "Basic " + base64.b64encode(b"alice:secret").decode()}
#: SO_LINGER on with a zero timeout: close() resets the connection, as a killed client would.
RESET_ON_CLOSE = struct.pack("ii", 1, 0)
DATA = os.urandom(9 * 1024 * 1024 + 12_345)  # several chunks and past the read-ahead threshold


def _upload(live_server: LiveServer) -> None:
    assert live_server.request("PUT", FILE, body=DATA).status == 201


def test_one_keep_alive_connection_serves_get_head_ranges_and_a_listing(
    live_server: LiveServer,
) -> None:
    _upload(live_server)
    conn = http.client.HTTPConnection("127.0.0.1", live_server.port, timeout=60)
    try:
        for _ in range(2):
            conn.request("GET", FILE, headers=AUTH)
            response = conn.getresponse()
            assert response.status == 200
            assert int(response.headers["Content-Length"]) == len(DATA)
            assert response.read() == DATA
        conn.request("HEAD", FILE, headers=AUTH)
        response = conn.getresponse()
        assert response.status == 200 and response.read() == b""
        assert int(response.headers["Content-Length"]) == len(DATA)
        start, end = 3_000_000, 8_500_000
        conn.request("GET", FILE, headers={**AUTH, "Range": f"bytes={start}-{end}"})
        response = conn.getresponse()
        assert response.status == 206 and response.read() == DATA[start : end + 1]
        conn.request("PROPFIND", "/remote.php/dav/files/alice/", headers={**AUTH, "Depth": "1"})
        response = conn.getresponse()
        assert response.status == 207 and b"big.bin" in response.read()
        conn.request("GET", FILE, headers={**AUTH, "Range": "bytes=-10"})
        response = conn.getresponse()
        assert response.status == 206 and response.read() == DATA[-10:]
        assert not response.will_close
    finally:
        conn.close()


def test_clients_that_leave_mid_get_do_not_hold_the_server(live_server: LiveServer) -> None:
    """More clients than the server has threads each read 64 KiB of a large GET and hang up;
    the server still answers the next request in full."""
    _upload(live_server)
    request = (
        f"GET {FILE} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: {AUTH['Authorization']}\r\n\r\n"
    ).encode("ascii")
    for _ in range(live_server.settings.threads + 4):
        with socket.create_connection(("127.0.0.1", live_server.port), timeout=60) as sock:
            sock.sendall(request)
            received = 0
            while received < 65_536:
                piece = sock.recv(65_536)
                assert piece
                received += len(piece)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, RESET_ON_CLOSE)
    response = live_server.request("GET", FILE)
    assert response.status == 200 and response.body == DATA


def test_a_get_under_another_wsgi_server_yields_only_bytes(live_server: LiveServer) -> None:
    """Mapped chunks go out as ``memoryview`` pieces only through oxidav's own gateway, which
    says so in the environ; under any other WSGI server (here wsgiref's validator, which
    insists on ``bytes``) the same app yields ``bytes`` — the embedding case."""
    _upload(live_server)
    assert live_server.services is not None
    app = validator(make_app(live_server.settings, live_server.services))
    environ: dict[str, Any] = {}
    setup_testing_defaults(environ)
    environ.update(
        REQUEST_METHOD="GET",
        PATH_INFO=FILE,
        QUERY_STRING="",
        HTTP_AUTHORIZATION=AUTH["Authorization"],
    )
    statuses: list[str] = []
    body = app(environ, lambda status, headers, exc_info=None: statuses.append(status))
    try:
        pieces = list(body)
    finally:
        body.close()
    assert statuses == ["200 OK"]
    assert all(type(piece) is bytes for piece in pieces) and b"".join(pieces) == DATA


def test_cheroots_error_answers_say_the_connection_closes(live_server: LiveServer) -> None:
    """A request cheroot refuses before the app (a raw byte, an empty target, a space in the
    target, a bare LF) is answered 400 with ``Connection: close``, and the server does close:
    a keep-alive client is told not to send its next request there."""
    for request in (
        b"GET /remote.php/dav/files/alice/\x80 HTTP/1.1\r\nHost: x\r\n\r\n",
        b"PUT  HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
        b"GET /a b HTTP/1.1\r\nHost: x\r\n\r\n",
        b"MOVE /remote.php/dav/files/alice/x HTTP/1.1\r\nHost: x\r\nDestination: /y\n\r\n\r\n",
    ):
        with socket.create_connection(("127.0.0.1", live_server.port), timeout=30) as sock:
            sock.sendall(request)
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        assert lines[0].startswith(b"HTTP/1.1 400"), answer[:200]
        assert b"Connection: close" in lines[1:], answer[:200]
        length = next(int(line.split(b":")[1]) for line in lines if line.startswith(b"Content-"))
        assert length == len(body)
