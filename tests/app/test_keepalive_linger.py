"""A worker that stays for a keep-alive connection's next request (``DirectSocketConnection``),
over real sockets and cheroot: it never keeps the server's only worker from a waiting
connection, an idle connection is still served after it went back to the selector, and the
server still stops while a client sends request after request."""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from cheroot import wsgi

from oxidav.http_connection import BufferGateway, DirectSocketConnection


def _hello(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
    start_response("200 OK", [("Content-Length", "5")])
    return [b"hello"]


@contextmanager
def _served(threads: int) -> Iterator[wsgi.Server]:
    """``_hello`` behind cheroot with oxidav's connection and gateway, as ``oxidav serve``."""
    server = wsgi.Server(("127.0.0.1", 0), _hello, numthreads=threads)
    server.ConnectionClass = DirectSocketConnection
    server.gateway = BufferGateway
    server.prepare()
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stop()
        thread.join(timeout=30)


def _port(server: wsgi.Server) -> int:
    return int(server.bind_addr[1])


def _get(conn: http.client.HTTPConnection) -> bytes:
    conn.request("GET", "/")
    response = conn.getresponse()
    assert response.status == 200
    return response.read()


def test_an_idle_connection_does_not_hold_the_only_worker() -> None:
    with _served(threads=1) as server:
        idle = http.client.HTTPConnection("127.0.0.1", _port(server), timeout=30)
        other = http.client.HTTPConnection("127.0.0.1", _port(server), timeout=30)
        try:
            assert _get(idle) == b"hello"
            assert _get(other) == b"hello"  # the idle connection stays open meanwhile
            assert _get(idle) == b"hello"  # and is served again from the selector
        finally:
            idle.close()
            other.close()


def test_a_busy_connection_does_not_starve_a_waiting_one() -> None:
    """One client sends request after request; another's single request is answered while
    the first is still going (the worker hands the busy connection back when another waits),
    not after it stops."""
    cap = 5000
    with _served(threads=1) as server:
        busy_count = 0
        done, under_way = threading.Event(), threading.Event()

        def busy() -> None:
            nonlocal busy_count
            conn = http.client.HTTPConnection("127.0.0.1", _port(server), timeout=30)
            try:
                while not done.is_set() and busy_count < cap:
                    _get(conn)
                    busy_count += 1
                    if busy_count == 20:
                        under_way.set()
            finally:
                conn.close()

        worker = threading.Thread(target=busy)
        worker.start()
        try:
            assert under_way.wait(timeout=60)
            other = http.client.HTTPConnection("127.0.0.1", _port(server), timeout=30)
            try:
                assert _get(other) == b"hello"
            finally:
                other.close()
            assert busy_count < cap, "the waiting request was served only after the busy client"
        finally:
            done.set()
            worker.join(timeout=60)


def test_the_server_stops_while_a_client_keeps_sending() -> None:
    stopped_client = threading.Event()
    errors: list[BaseException] = []
    with _served(threads=2) as server:
        started = threading.Event()

        def keep_sending() -> None:
            conn = http.client.HTTPConnection("127.0.0.1", _port(server), timeout=30)
            try:
                while True:
                    _get(conn)
                    started.set()
            except (OSError, http.client.HTTPException) as exc:
                errors.append(exc)
            finally:
                conn.close()
                stopped_client.set()

        client = threading.Thread(target=keep_sending, daemon=True)
        client.start()
        assert started.wait(timeout=30)
    # leaving the block stopped the server: the client's connection was closed under it
    assert stopped_client.wait(timeout=30)
    assert errors
