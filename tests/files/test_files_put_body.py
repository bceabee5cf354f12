"""A PUT's body straight from cheroot's socket reader (``oxidav.providers.files.body``), and the
one-query lock check of a PUT: which locks of the target's ancestors conflict."""

from __future__ import annotations

import _pyio
import http.client
import os
import socket
import threading

from cheroot.server import KnownLengthRFile

from oxidav.providers.files.body import SocketBody, StreamBody
from tests.support.files import AUTH, raw_request, url
from tests.support.live import LiveServer

LOCKINFO = (
    b'<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/>'
    b"</D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>"
)


def _reader_with(data: bytes, prefix: int) -> tuple[KnownLengthRFile, socket.socket]:
    """cheroot's body reader over a socket holding ``data``, ``prefix`` bytes of it already
    buffered by the reader (as after the request head)."""
    ours, theirs = socket.socketpair()

    def send() -> None:
        with theirs:
            theirs.sendall(data)

    threading.Thread(target=send, daemon=True).start()
    reader = _pyio.BufferedReader(socket.SocketIO(ours, "rb"), 8192)  # type: ignore[arg-type]
    reader.bytes_read = 0  # type: ignore[attr-defined]  # cheroot's StreamReader counter
    while len(reader.peek(prefix)) < prefix:
        pass
    return KnownLengthRFile(reader, len(data) - 7), ours


def test_socket_body_reads_buffered_then_socket_and_stops_at_the_length() -> None:
    data = os.urandom(300_000)
    known, sock = _reader_with(data, 100)
    try:
        assert SocketBody.fits(known)
        body = SocketBody(known, len(data) - 7)
        got = bytearray()
        buffer = bytearray(65536)
        while n := body.readinto(buffer):
            got += buffer[:n]
        # Everything up to the length, in order; the 7 bytes after it stay in the stream.
        assert bytes(got) == data[:-7]
        assert known.remaining == 0
        assert known.rfile.bytes_read == len(data) - 7
        assert known.rfile.read(7) == data[-7:]
    finally:
        sock.close()


def test_other_streams_are_read_with_read_and_bounded() -> None:
    import io

    assert not SocketBody.fits(io.BytesIO(b"abc"))
    body = StreamBody(io.BytesIO(b"0123456789"), 6)
    buffer = bytearray(4)
    assert body.readinto(buffer) == 4 and bytes(buffer) == b"0123"
    assert body.readinto(buffer) == 2 and bytes(buffer[:2]) == b"45"
    assert body.readinto(buffer) == 0
    assert StreamBody(io.BytesIO(b"xyz"), None).read() == b"xyz"


def test_large_puts_on_one_keep_alive_connection(live_server: LiveServer) -> None:
    first, second = os.urandom(9 << 20), os.urandom(3 << 20) + b"tail"
    conn = http.client.HTTPConnection("127.0.0.1", live_server.port, timeout=60)
    try:
        for path, body, status in (("/big1", first, 201), ("/big2", second, 201)):
            conn.request("PUT", url(path), body=body, headers={"Authorization": AUTH})
            response = conn.getresponse()
            response.read()
            assert response.status == status
        conn.request("GET", url("/big1"), headers={"Authorization": AUTH})
        assert conn.getresponse().read() == first
    finally:
        conn.close()
    assert live_server.request("GET", url("/big2")).body == second


def test_a_request_right_behind_the_body_is_not_swallowed(live_server: LiveServer) -> None:
    body = os.urandom(200_000)
    put = f"PUT {url('/p.bin')} HTTP/1.1\nHost: 127.0.0.1\nAuthorization: {AUTH}\n"
    put += f"Content-Length: {len(body)}"
    get = f"GET {url('/p.bin')} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: {AUTH}\r\n\r\n"
    answer = raw_request(live_server.port, put, body + get.encode())
    assert answer.startswith(b"HTTP/1.1 201")
    assert answer.count(b"HTTP/1.1 200") == 1
    assert answer.endswith(body)


def test_an_oc_checksum_body_is_verified_on_the_stream_path(live_server: LiveServer) -> None:
    import hashlib

    body = os.urandom(500_000)
    good = {"OC-Checksum": "SHA1:" + hashlib.sha1(body).hexdigest()}
    assert live_server.request("PUT", url("/s.bin"), body, headers=good).status == 201
    assert live_server.request("GET", url("/s.bin")).body == body
    bad = {"OC-Checksum": "SHA1:" + "0" * 40}
    assert live_server.request("PUT", url("/s.bin"), b"other", headers=bad).status == 400
    assert live_server.request("GET", url("/s.bin")).body == body


def _lock(live_server: LiveServer, path: str, depth: str) -> str:
    response = live_server.request("LOCK", url(path), LOCKINFO, headers={"Depth": depth})
    assert response.status in (200, 201), response.status
    return str(response.headers["lock-token"])


def test_which_ancestor_locks_a_put_meets(live_server: LiveServer) -> None:
    for folder in ("/a", "/a/b", "/x", "/x/y"):
        assert live_server.request("MKCOL", url(folder)).status == 201
    assert live_server.request("PUT", url("/a/b/old.txt"), b"old").status == 201
    # A depth-0 lock on the parent: an overwrite does not change the folder's members, a new
    # member does; a depth-0 lock on the grandparent concerns neither.
    _lock(live_server, "/a/b/", "0")
    _lock(live_server, "/a/", "0")
    assert live_server.request("PUT", url("/a/b/old.txt"), b"new").status == 204
    assert live_server.request("PUT", url("/a/b/member.txt"), b"m").status == 423
    assert live_server.request("GET", url("/a/b/member.txt")).status == 404
    # A depth-infinity lock on the grandparent covers both.
    token = _lock(live_server, "/x/", "infinity")
    assert live_server.request("PUT", url("/x/y/member.txt"), b"m").status == 423
    with_token = {"If": f"({token})"}
    made = live_server.request("PUT", url("/x/y/member.txt"), b"m", headers=with_token)
    assert made.status == 201
    assert live_server.request("PUT", url("/x/y/member.txt"), b"n").status == 423
    assert live_server.request("GET", url("/x/y/member.txt")).body == b"m"
