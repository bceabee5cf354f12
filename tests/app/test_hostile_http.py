"""Hostile clients at the HTTP layer, over raw sockets against an ``oxidav serve`` process: an
announced body or chunk is not allocated before it arrives, a huge header line is refused
without being read whole, half-sent request heads do not take the worker threads, and a head
has a total deadline that trickled bytes do not restart. Memory is the server process's peak
resident size (``VmHWM``), so an allocation freed before the measurement still counts."""

from __future__ import annotations

import base64
import http.client
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager
from pathlib import Path
from typing import BinaryIO

import pytest

from tests.support.live import ServerProcess, start_server_process

ADMIN = "Basic " + base64.b64encode(b"admin:adminpw").decode()
#: Growth of the server's peak memory allowed while one attack runs.
MAX_GROWTH = 32 << 20


@contextmanager
def _serving(data: Path, **env: str) -> Iterator[ServerProcess]:
    process = start_server_process(
        ["--data-dir", str(data), "--port", "0"], env={"OXIDAV_ADMIN_PASSWORD": "adminpw", **env}
    )
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with _serving(tmp_path_factory.mktemp("hostile")) as process:
        yield process


@pytest.fixture
def fresh_server(tmp_path: Path) -> Iterator[ServerProcess]:
    """A server of its own, for a test of its peak memory (which only ever grows)."""
    with _serving(tmp_path) as process:
        yield process


def _port(server: ServerProcess) -> int:
    return int(server.base_url.rsplit(":", 1)[1])


def _memory(server: ServerProcess, field: str = "VmHWM") -> int:
    """``field`` of the server process's /proc status, in bytes."""
    for line in Path(f"/proc/{server.process.pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} in /proc status")


def _connect(server: ServerProcess, timeout: float = 30) -> socket.socket:
    return socket.create_connection(("127.0.0.1", _port(server)), timeout=timeout)


def _answer_then_eof(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes (or the socket's timeout)."""
    pieces = []
    try:
        while piece := sock.recv(65536):
            pieces.append(piece)
    except (TimeoutError, ConnectionResetError):
        pass
    return b"".join(pieces)


def _status_php(server: ServerProcess, timeout: float = 10) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", _port(server), timeout=timeout)
    try:
        conn.request("GET", "/status.php")
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def _attack(server: ServerProcess, head: bytes, body: bytes = b"") -> bytes:
    """Send ``head`` and ``body``, end the sending side, and return the answer."""
    with closing(_connect(server)) as sock:
        sock.sendall(head + body)
        sock.shutdown(socket.SHUT_WR)
        return _answer_then_eof(sock)


@pytest.mark.parametrize(
    "request_line",
    [b"GET /status.php HTTP/1.1", b"PUT /remote.php/dav/files/admin/x.bin HTTP/1.1"],
    ids=["status.php", "unauthenticated PUT"],
)
def test_announced_body_is_not_allocated(fresh_server: ServerProcess, request_line: bytes) -> None:
    server = fresh_server
    assert _status_php(server) == 200
    before = _memory(server)
    head = request_line + b"\r\nHost: x\r\nContent-Length: 300000000\r\n\r\n"
    answers = [_attack(server, head) for _ in range(3)]
    growth = _memory(server) - before
    assert growth < MAX_GROWTH, f"peak memory grew {growth >> 20} MiB"
    for answer in answers:
        assert answer.startswith(b"HTTP/1.1 "), answer[:200]
    assert _status_php(server) == 200


def test_announced_chunk_is_not_allocated(fresh_server: ServerProcess) -> None:
    server = fresh_server
    assert _status_php(server) == 200
    before = _memory(server)
    head = (
        b"PUT /remote.php/dav/files/admin/chunked.bin HTTP/1.1\r\nHost: x\r\n"
        b"Authorization: " + ADMIN.encode() + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    _attack(server, head, b"12000000\r\nabc")
    growth = _memory(server) - before
    assert growth < MAX_GROWTH, f"peak memory grew {growth >> 20} MiB"
    assert _status_php(server) == 200


@pytest.mark.parametrize("size_line", [b"0x10", b"+10", b"1_0", b"-1", b"1" * 40, b"zz"])
def test_malformed_chunk_size_is_refused(server: ServerProcess, size_line: bytes) -> None:
    """A chunk size is hex digits only: the body is refused with 400, nothing is stored."""
    path = b"/remote.php/dav/files/admin/badchunk.bin"
    head = (
        b"PUT " + path + b" HTTP/1.1\r\nHost: x\r\nAuthorization: " + ADMIN.encode() + b"\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    answer = _attack(server, head, size_line + b"\r\n" + b"x" * 16 + b"\r\n0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
    conn = http.client.HTTPConnection("127.0.0.1", _port(server), timeout=10)
    conn.request("GET", path.decode(), headers={"Authorization": ADMIN})
    assert conn.getresponse().status == 404
    conn.close()


def test_huge_header_line_is_refused_unread(fresh_server: ServerProcess) -> None:
    """A 64 MiB header line: refused (4xx) or cut off long before it is all sent."""
    server = fresh_server
    assert _status_php(server) == 200
    before = _memory(server)
    piece = b"a" * 65536
    sent = 0
    refused_while_sending = False
    with closing(_connect(server)) as sock:
        try:
            sock.sendall(b"GET /status.php HTTP/1.1\r\nHost: x\r\nX-Big: ")
            while sent < 64 << 20:
                sock.sendall(piece)
                sent += len(piece)
            sock.sendall(b"\r\n\r\n")
        except OSError:
            refused_while_sending = True
        answer = _answer_then_eof(sock)
    assert refused_while_sending or answer[9:10] == b"4", answer[:200]
    assert not answer.startswith(b"HTTP/1.1 2"), answer[:200]
    assert sent < 32 << 20, f"the server read {sent >> 20} MiB of one header line"
    growth = _memory(server) - before
    assert growth < MAX_GROWTH, f"peak memory grew {growth >> 20} MiB"
    assert _status_php(server) == 200


@pytest.mark.parametrize(
    "half_request",
    [
        b"GET /status.php HTTP/1.1\r\nHost: x\r\n",
        b"PUT /remote.php/dav/files/admin/x.bin HTTP/1.1\r\nHost: x\r\n"
        b"Content-Length: 1000\r\n\r\nabc",
    ],
    ids=["half a head", "unauthenticated, half a body"],
)
def test_half_sent_requests_do_not_take_the_workers(
    server: ServerProcess, half_request: bytes
) -> None:
    """200 connections stop in the middle of their request; a normal request is still
    answered (the test waits generously; the latency is measured, not asserted)."""
    with ExitStack() as stack:
        for _ in range(200):
            sock = stack.enter_context(closing(_connect(server)))
            sock.sendall(half_request)
        assert _status_php(server, timeout=10) == 200


def _read_response(reader: BinaryIO) -> int:
    """The status of one response read whole from ``reader`` (framed by Content-Length)."""
    status = int(reader.readline().split()[1])
    length = 0
    while (line := reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    assert len(reader.read(length)) == length
    return status


def test_pipelined_and_split_heads_on_one_connection(server: ServerProcess) -> None:
    """Keep-alive through the front: two pipelined requests, then a head sent in two parts."""
    request = b"GET /status.php HTTP/1.1\r\nHost: x\r\n\r\n"
    with closing(_connect(server, timeout=10)) as sock, sock.makefile("rb") as reader:
        sock.sendall(request + request)
        assert [_read_response(reader), _read_response(reader)] == [200, 200]
        sock.sendall(request[:20])
        sock.sendall(request[20:])
        assert _read_response(reader) == 200


def test_head_deadline_is_total_not_per_byte(tmp_path: Path) -> None:
    """A client trickling its head one byte at a time is answered 408 and closed once
    ``request_head_timeout`` has passed since it connected."""
    trickle = b"GET /status.php HTTP/1.1\r\nX-Slow: " + b"s" * 1000
    answer = b""
    with (
        _serving(tmp_path, OXIDAV_REQUEST_HEAD_TIMEOUT="1") as process,
        closing(_connect(process)) as sock,
    ):
        sock.settimeout(0.2)
        give_up = time.monotonic() + 30
        for byte in trickle:
            if answer or time.monotonic() > give_up:
                break
            try:
                sock.sendall(bytes([byte]))
                answer = sock.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                break
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]


@pytest.mark.parametrize("authorization", [None, ADMIN], ids=["unauthenticated", "over-limit"])
def test_a_client_still_sending_a_refused_body_reads_the_answer(
    fresh_server: ServerProcess, authorization: str | None
) -> None:
    """A client that sends its whole body before reading (no ``Expect: 100-continue``, as
    Python's http.client, many DAV clients and the first unauthenticated try of others do)
    gets the answer — 401, or 403 for a vCard over ``max_resource_bytes`` — not a broken pipe
    or a reset, and the server does not buffer the body it throws away."""
    before = _memory(fresh_server)
    headers = {"Content-Type": "text/vcard"}
    if authorization is not None:
        headers["Authorization"] = authorization
    card = (
        b"BEGIN:VCARD\r\nVERSION:3.0\r\nUID:big\r\nFN:Big\r\nNOTE:"
        + b"x" * (24 << 20)
        + b"\r\nEND:VCARD\r\n"
    )
    conn = http.client.HTTPConnection("127.0.0.1", _port(fresh_server), timeout=60)
    with closing(conn):
        conn.request(
            "PUT", "/remote.php/dav/addressbooks/users/admin/contacts/big.vcf", card, headers
        )
        response = conn.getresponse()
        response.read()
    assert response.status == (401 if authorization is None else 403)
    assert response.getheader("Connection", "").lower() == "close"
    assert _memory(fresh_server) - before < MAX_GROWTH
    # The server still answers on a new connection.
    status = http.client.HTTPConnection("127.0.0.1", _port(fresh_server), timeout=30)
    with closing(status):
        status.request("GET", "/status.php")
        assert status.getresponse().status == 200
