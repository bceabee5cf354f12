"""``SocketReader`` over real sockets: lines, sized reads, ``readinto`` and ``has_data`` as
cheroot uses them, with the bytes arriving whole, in pieces, or not at all; and over a real
server: pipelined requests, a request head sent a few bytes at a time, and a body handed to
the ingest straight from the socket."""

from __future__ import annotations

import base64
import os
import socket
import threading
from collections.abc import Iterator

import pytest
from cheroot.server import HeaderReader, SizeCheckWrapper

from oxidav.http_reader import RECV_SIZE, UNSIZED_LINE_MAX, SocketReader
from tests.support.live import LiveServer

AUTH = "Basic " + base64.b64encode(b"alice:secret").decode()
BASE = "/remote.php/dav/files/alice/"


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    left, right = socket.socketpair()
    left.settimeout(30)
    right.settimeout(30)
    with left, right:
        yield left, right


def _send_in_pieces(sock: socket.socket, data: bytes, piece: int) -> threading.Thread:
    def send() -> None:
        for start in range(0, len(data), piece):
            sock.sendall(data[start : start + piece])

    thread = threading.Thread(target=send)
    thread.start()
    return thread


def test_lines_and_a_body_from_one_receive(pair: tuple[socket.socket, socket.socket]) -> None:
    client, server = pair
    client.sendall(b"PUT /a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET /b")
    reader = SocketReader(server)
    assert reader.readline() == b"PUT /a HTTP/1.1\r\n"
    assert reader.readline(4) == b"Cont"
    assert reader.readline() == b"ent-Length: 5\r\n"
    assert reader.readline() == b"\r\n"
    assert reader.read(5) == b"hello"
    assert reader.has_data()  # the next request is already here
    assert reader.read(6) == b"GET /b"
    assert not reader.has_data()
    assert reader.bytes_read == len(b"PUT /a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET /b")


def test_a_request_head_sent_one_byte_at_a_time(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    client, server = pair
    head = b"GET /x HTTP/1.1\r\nHost: a\r\nX-Long: " + b"v" * 700 + b"\r\n\r\n"
    sender = _send_in_pieces(client, head, 1)
    wrapper = SizeCheckWrapper(SocketReader(server), 65536)
    assert wrapper.readline() == b"GET /x HTTP/1.1\r\n"
    headers = HeaderReader()(wrapper, {})
    sender.join(timeout=30)
    assert headers[b"Host"] == b"a" and headers[b"X-Long"] == b"v" * 700


def test_sized_reads_wait_for_all_their_bytes(pair: tuple[socket.socket, socket.socket]) -> None:
    client, server = pair
    small, large = os.urandom(RECV_SIZE // 2), os.urandom(3 * RECV_SIZE + 17)
    sender = _send_in_pieces(client, b"x" + small + large, 1000)
    reader = SocketReader(server)
    assert reader.read(1) == b"x"
    assert reader.read(len(small)) == small  # smaller than a receive: through the buffer
    assert reader.read(len(large)) == large  # larger: straight into the result
    sender.join(timeout=30)
    assert reader.bytes_read == 1 + len(small) + len(large)


def test_the_end_of_the_stream(pair: tuple[socket.socket, socket.socket]) -> None:
    client, server = pair
    client.sendall(b"line one\nrest without newline")
    client.shutdown(socket.SHUT_WR)
    reader = SocketReader(server)
    assert list(reader) == [b"line one\n", b"rest without newline"]
    assert reader.readline() == b""
    assert reader.read(10) == b""
    assert reader.read() == b""
    assert reader.readinto(bytearray(10)) == 0


def test_read_without_a_size_reads_to_the_end(pair: tuple[socket.socket, socket.socket]) -> None:
    client, server = pair
    data = os.urandom(2 * RECV_SIZE + 5)
    client.sendall(b"head\n")
    reader = SocketReader(server)
    assert reader.readline() == b"head\n"

    def send_then_close() -> None:
        _send_in_pieces(client, data, 7000).join(timeout=30)
        client.shutdown(socket.SHUT_WR)

    sender = threading.Thread(target=send_then_close)
    sender.start()
    assert reader.read() == data
    sender.join(timeout=30)


def test_readinto_hands_over_the_buffer_first(pair: tuple[socket.socket, socket.socket]) -> None:
    client, server = pair
    client.sendall(b"head\nbody")
    reader = SocketReader(server)
    assert reader.readline() == b"head\n"
    buffer = bytearray(100)
    assert reader.readinto(buffer) == 4 and buffer[:4] == b"body"
    client.sendall(b"more bytes")
    assert reader.readinto(memoryview(buffer)[:4]) == 4 and buffer[:4] == b"more"
    assert reader.readinto(buffer) == 6 and buffer[:6] == b" bytes"
    assert reader.readinto(bytearray()) == 0
    assert reader.bytes_read == 5 + 4 + 10


def test_a_line_without_a_size_stops_at_its_cap(pair: tuple[socket.socket, socket.socket]) -> None:
    client, server = pair
    sender = _send_in_pieces(client, b"7" * (UNSIZED_LINE_MAX + 10), 9000)
    reader = SocketReader(server)
    assert reader.readline() == b"7" * UNSIZED_LINE_MAX
    sender.join(timeout=30)
    assert reader.readline(0) == b""
    assert reader.read(10) == b"7" * 10


def _raw_exchange(port: int, request: bytes, answers: int) -> bytes:
    """Send ``request`` and read until ``answers`` complete responses (each with a
    Content-Length) have arrived."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(request)
        reader = SocketReader(sock)
        received = b""
        for _ in range(answers):
            length = 0
            while (line := reader.readline()) != b"\r\n":
                assert line, "the server closed the connection early"
                received += line
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            received += b"\r\n" + reader.read(length)
        return received


def test_pipelined_requests_are_all_answered(live_server: LiveServer) -> None:
    """Three requests in one send: the second and third wait in the reader's buffer
    (``has_data``), not in the socket, and must still be served."""
    assert live_server.request("PUT", BASE + "p.txt", body=b"pipelined").status == 201
    one = f"GET {BASE}p.txt HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: {AUTH}\r\n\r\n"
    put = (
        f"PUT {BASE}q.txt HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: {AUTH}\r\n"
        "Content-Length: 4\r\n\r\nquux"
    )
    received = _raw_exchange(live_server.port, (one + put + one).encode(), 3)
    assert received.count(b"HTTP/1.1 200 OK") == 2 and received.count(b"pipelined") == 2
    assert b"HTTP/1.1 201 Created" in received
    assert live_server.request("GET", BASE + "q.txt").body == b"quux"


def test_a_request_trickled_in_is_served(live_server: LiveServer) -> None:
    body = os.urandom(300_000)
    head = (
        f"PUT {BASE}slow.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: {AUTH}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", live_server.port), timeout=60) as sock:
        for start in range(0, len(head), 3):
            sock.sendall(head[start : start + 3])
        for start in range(0, len(body), 50_000):
            sock.sendall(body[start : start + 50_000])
        status = SocketReader(sock).readline()
    assert status.startswith(b"HTTP/1.1 201")
    assert live_server.request("GET", BASE + "slow.bin").body == body
