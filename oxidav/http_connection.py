"""cheroot connections that read and write the socket directly (``DirectSocketConnection``),
and the gateway that sends ``FileRegion`` body pieces with ``sendfile`` (``BufferGateway``).

cheroot writes responses through ``cheroot.makefile.BufferedWriter``, a ``_pyio`` writer that
appends every piece to a ``bytearray``, copies that to ``bytes`` for ``send`` and shifts down
what the socket did not take: each byte of a large GET was copied three or more times in
Python before the kernel's own copy (``perf``: 8 % of a 512 MiB GET in ``memmove`` alone).
``SocketWriter`` hands each piece to ``socket.sendall`` as it is and counts ``bytes_written``
as cheroot's statistics expect. The one thing it gathers is the start of a response
(``BoundedRequest.respond`` holds it): cheroot sends the head and each body piece on their
own, so a small answer took two ``send`` calls and woke the client twice; held, head and body
go out in one, up to ``HOLD_BYTES``, after which the rest streams as before. Whatever is held
is sent when the response ends, fails or switches to ``sendfile``.

Requests are read by ``oxidav.http_reader.SocketReader`` instead of cheroot's ``_pyio``
reader, for the same reason. Only plain-TCP connections get either: a TLS adapter brings its
own ``makefile`` and keeps it.

A keep-alive connection goes back to cheroot's selector after each response; its next request
then wakes the selector's thread, which queues the connection, which wakes a worker: two thread
hand-offs and two ``epoll_ctl`` calls between a client's back-to-back requests. When no other
connection waits for a worker, the worker that answered waits up to ``KEEPALIVE_LINGER_MS`` on
the connection itself and serves its next request directly. A TLS socket is read for it
without blocking (half a record is not a head), and decrypted bytes OpenSSL holds count as
readable. The wait blocks in ``poll``: it costs the thread, not CPU, and the server has far
more threads than cores.

WSGI asks for ``bytes`` pieces and cheroot's gateway refuses anything else. A file served from
a local chunk is a ``FileRegion`` (``oxidav.blobs.regions``): making ``bytes`` of it is a copy
of every byte through the process, ``sendfile(2)`` hands the file's page-cache pages to the
socket instead. ``BufferGateway`` sends regions that way and says so in the environ
(``ENVIRON_SENDS_FILE_REGIONS``): an app yields regions only where that key is set, so the same app
under any other WSGI server yields ``bytes`` as before.
"""

from __future__ import annotations

import select
import socket
import ssl
from collections.abc import Callable
from typing import Any

from cheroot.makefile import MakeFile
from cheroot.server import HTTPConnection
from cheroot.wsgi import Gateway_10

from oxidav.blobs.regions import FileRegion
from oxidav.environ import ENVIRON_SENDS_FILE_REGIONS
from oxidav.http_reader import HeadState, SocketReader, tls_pending
from oxidav.http_request import BoundedRequest

#: After a keep-alive response, how long (ms) the worker waits on the connection for its next
#: request before handing it back to cheroot's selector.
KEEPALIVE_LINGER_MS = 2
#: A response's head and the start of its body are sent together up to this many bytes (one
#: ``send`` and one wake-up of the client for a small answer, where there were two).
HOLD_BYTES = 16 * 1024
#: The head size limit when the server sets none (cheroot's ``max_request_header_size = 0``).
UNSIZED_HEAD_MAX = 1 << 20


class SocketWriter:
    """The write side of a connection: every ``write`` is one ``sendall``, except while a
    response is held (``hold``): then its head and the first pieces of its body gather, up to
    ``HOLD_BYTES``, and go out together (``release``)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self.bytes_written = 0
        self._held: bytearray | None = None

    def hold(self) -> None:
        """Gather what is written next (the start of one response) instead of sending it."""
        self._held = bytearray()

    def release(self) -> None:
        """Send what was gathered and stop gathering."""
        held, self._held = self._held, None
        if held:
            self._sock.sendall(held)

    def write(self, data: bytes | bytearray | memoryview) -> int:
        size = len(data)
        held = self._held
        if held is not None:
            if len(held) + size <= HOLD_BYTES:
                held += data
                self.bytes_written += size
                return size
            self.release()
        self._sock.sendall(data)
        self.bytes_written += size
        return size

    def send_region(self, region: FileRegion) -> int:
        """Send the bytes of ``region`` with ``sendfile``: from its file straight to the
        socket (``socket.sendfile`` waits out a full socket within the connection's timeout)."""
        self.release()
        with open(region.fd, "rb", buffering=0, closefd=False) as file:
            sent = self._sock.sendfile(file, region.offset, region.length)
        self.bytes_written += sent
        if sent != region.length:
            raise OSError(f"{region!r}: the file ended after {sent} bytes")
        return sent

    def flush(self) -> None:
        """Nothing is buffered."""

    def close(self) -> None:
        """The connection closes the socket."""


class DirectSocketConnection(HTTPConnection):
    """cheroot's ``HTTPConnection`` with a ``SocketReader`` and a ``SocketWriter`` on plain
    TCP, whose worker stays for the next request of a busy keep-alive connection, and whose
    requests read bodies in bounded pieces (``BoundedRequest``)."""

    RequestHandlerClass = BoundedRequest
    #: Set by ``BoundedRequest`` when an answer went out before the request body was read:
    #: ``close`` then hands the connection to the front's lingering close.
    unread_body = False
    #: Set by the front when it counted the connection for its worker
    #: (``oxidav.connection_shares``): called once, when the connection closes.
    release_share: Callable[[], None] | None = None

    def __init__(self, server: Any, sock: socket.socket, makefile: Any = MakeFile) -> None:
        super().__init__(server, sock, makefile)
        self._next_request: select.poll | None = None
        if makefile is MakeFile:
            self.rfile = SocketReader(sock)
            self.wfile = SocketWriter(sock)
            self._next_request = select.poll()
            self._next_request.register(sock.fileno(), select.POLLIN)

    def communicate(self) -> bool:
        """cheroot's ``communicate`` (one request; True: keep the connection), repeated while
        the next request's head is already here or arrives within ``KEEPALIVE_LINGER_MS``;
        False as soon as the client is seen to have closed."""
        while True:
            keep_open: bool = super().communicate()  # type: ignore[no-untyped-call]
            if not keep_open:
                return False
            state = self._next_request_state()
            if state is not HeadState.COMPLETE:
                return state is not HeadState.CLOSED

    def close(self) -> None:
        """Close; or, when the client may still be sending a body nobody read, end the
        answer (``SHUT_WR``) and let the front discard the rest before closing, so the client
        reads the answer instead of a connection reset. (On TLS, ``SSLSocket.shutdown`` drops
        the TLS layer after the answer went out: what is discarded is the raw bytes.)"""
        linger = getattr(self.server, "linger", None)
        if self.unread_body and self._next_request is not None and linger is not None:
            self.unread_body = False
            try:
                self.socket.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            else:
                self.rfile.close()
                if linger(self):
                    return
        release, self.release_share = self.release_share, None
        try:
            super().close()
        finally:
            if release is not None:
                release()

    def _next_request_state(self) -> HeadState:
        """Where the connection's next request stands, for this worker to serve it itself
        (``COMPLETE``): not while the server stops or other connections wait for a worker, and
        only if the request's whole head is buffered or comes within the linger (else the
        front waits for it)."""
        server = self.server
        if self._next_request is None or not server.ready or server.requests.qsize:
            return HeadState.EMPTY
        limit = server.max_request_header_size or UNSIZED_HEAD_MAX
        reader: SocketReader = self.rfile
        if reader.has_data():
            return reader.head_state(limit)
        sock = self.socket
        if not (tls_pending(sock) or self._next_request.poll(KEEPALIVE_LINGER_MS)):
            return HeadState.EMPTY
        if not isinstance(sock, ssl.SSLSocket):
            return reader.receive_head(limit)
        sock.settimeout(0)
        try:
            return reader.receive_head(limit)
        finally:
            sock.settimeout(server.timeout)


class BufferGateway(Gateway_10):
    """cheroot's WSGI 1.0 gateway that also takes ``FileRegion`` body pieces (sent with
    ``sendfile``, then closed)."""

    def get_environ(self) -> dict[str, Any]:  # type: ignore[override]  # cheroot's stub: None
        environ: dict[str, Any] = super().get_environ()  # type: ignore[no-untyped-call]
        environ[ENVIRON_SENDS_FILE_REGIONS] = True
        return environ

    def respond(self) -> None:
        """cheroot's ``respond``, with ``FileRegion`` beside ``bytes``."""
        response = self.req.server.wsgi_app(self.env, self.start_response)
        try:
            for chunk in response:
                if isinstance(chunk, FileRegion):
                    with chunk:
                        self._send_region(chunk)
                    continue
                if not isinstance(chunk, bytes):
                    raise ValueError("WSGI Applications must yield bytes")
                if chunk:
                    self.write(chunk)
        finally:
            self.req.ensure_headers_sent()
            close = getattr(response, "close", None)
            if close is not None:
                close()

    def _send_region(self, region: FileRegion) -> None:
        writer = self.req.conn.wfile
        rbo = self.remaining_bytes_out
        if (
            not isinstance(writer, SocketWriter)
            or self.req.chunked_write
            or not self.started_response
            or (rbo is not None and len(region) > rbo)
        ):
            self.write(region.view)  # cheroot's checks, framing and errors
            return
        if not region.length:
            return
        self.req.ensure_headers_sent()
        writer.send_region(region)


__all__ = ["ENVIRON_SENDS_FILE_REGIONS", "BufferGateway", "DirectSocketConnection", "SocketWriter"]
