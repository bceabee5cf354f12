"""``BoundedRequest``: cheroot's ``HTTPRequest`` whose request bodies are read in bounded pieces.

cheroot buffers what a client announces, not what it sends: ``ChunkedRFile`` reads a whole
chunk with one ``read(chunk_size)`` (a chunk-size line of ``12000000`` asks for 288 MiB at
once) and accepts any ``int(…, 16)`` spelling (``0x…``, ``+…``, ``1_0``); ``send_headers``
drains the unread rest of a body the application did not want (a 401, a refused PUT) with
one ``read(remaining)``. Here:

- ``BoundedChunkedRFile`` reads a chunk in pieces of at most its buffer size and takes only
  chunk-size lines of 1 to 16 hex digits (an optional ``;extension`` after), within
  ``CHUNK_LINE_MAX`` bytes; anything else raises ``BadChunkedBody``.
- An unread body of at most ``DRAIN_MAX`` bytes that the client has already sent is dropped
  in pieces, so the connection stays open for the next request; a longer one, one still on
  its way, or an unfinished chunked body is not waited for: the answer says
  ``Connection: close``, and after it the front discards what the client still sends for a
  bounded time (a lingering close, ``oxidav.http_front``) so that a client still sending its
  body reads the answer instead of a reset.
- cheroot's own error answers (``simple_response``: a malformed request line or header, a
  head over its limit, a timeout, a full queue) close the connection after them; they say
  ``Connection: close`` so a keep-alive client knows not to send its next request there.
"""

from __future__ import annotations

import contextlib
from typing import Any

from cheroot.server import ChunkedRFile, HTTPRequest, KnownLengthRFile
from wsgidav.dav_error import HTTP_BAD_REQUEST, DAVError

from oxidav.http_reader import SocketReader

#: The longest unread request body read and dropped to keep a connection open after an
#: answer that did not want it; the connection closes instead beyond it.
DRAIN_MAX = 64 * 1024
#: Bytes read at a time while dropping an unread body.
DRAIN_PIECE = 16 * 1024
#: The longest chunk-size line (hex size, extensions and CRLF) accepted.
CHUNK_LINE_MAX = 4096
#: More hex digits than this in a chunk size is not a size anyone sends (16 digits: 2**64).
CHUNK_SIZE_DIGITS_MAX = 16
_HEX_DIGITS = frozenset(b"0123456789abcdefABCDEF")


class BadChunkedBody(DAVError, ValueError):  # type: ignore[misc]  # wsgidav: untyped
    """The chunked request body is not well-formed: 400, the reason in ``context_info``.

    A ``DAVError`` because it surfaces in the application, where the body is read; a
    ``ValueError`` as cheroot's own error for a bad chunk is."""

    def __init__(self, reason: str) -> None:
        super().__init__(HTTP_BAD_REQUEST, reason)


def parse_chunk_size(line: bytes) -> int:
    """The size of a chunk from its size line (``HEX[;ext]CRLF``)."""
    if not line.endswith(b"\n"):
        raise BadChunkedBody("chunk-size line too long or body ended")
    field = line.split(b";", 1)[0].strip(b" \t\r\n")
    if not field or len(field) > CHUNK_SIZE_DIGITS_MAX or not _HEX_DIGITS.issuperset(field):
        raise BadChunkedBody(f"bad chunk size {field[: CHUNK_SIZE_DIGITS_MAX + 1]!r}")
    return int(field, 16)


class BoundedChunkedRFile(ChunkedRFile):
    """cheroot's ``ChunkedRFile``, fetching at most ``bufsize`` bytes of a chunk at a time."""

    def __init__(self, rfile: Any, maxlen: int, bufsize: int = 64 * 1024) -> None:
        super().__init__(rfile, maxlen, bufsize)
        self._chunk_left = 0

    def _fetch(self) -> None:
        if self.closed:
            return
        if not self._chunk_left:
            line = self.rfile.readline(CHUNK_LINE_MAX)
            self.bytes_read += len(line)
            size = parse_chunk_size(line)
            if not size:
                self.closed = True
                return
            if self.maxlen and self.bytes_read + size > self.maxlen:
                raise OSError("Request Entity Too Large")
            self._chunk_left = size
        piece = self.rfile.read(min(self._chunk_left, self.bufsize))
        if not piece:
            raise BadChunkedBody("the body ended inside a chunk")
        self.bytes_read += len(piece)
        self._chunk_left -= len(piece)
        self.buffer += piece
        if not self._chunk_left and self.rfile.read(2) != b"\r\n":
            raise BadChunkedBody("a chunk does not end with CRLF")


class BoundedRequest(HTTPRequest):
    """cheroot's ``HTTPRequest`` with ``BoundedChunkedRFile`` and a bounded drain."""

    def respond(self) -> None:
        """cheroot's ``respond``, with ``BoundedChunkedRFile``; on a ``SocketWriter`` the head
        and the start of the body go out together (``SocketWriter.hold``)."""
        mrbs = self.server.max_request_body_size
        if self.chunked_read:
            self.rfile = BoundedChunkedRFile(self.conn.rfile, mrbs)
        else:
            length = int(self.inheaders.get(b"Content-Length", 0))
            if mrbs and mrbs < length:
                if not self.sent_headers:
                    self.simple_response(
                        "413 Request Entity Too Large",
                        "The entity sent with the request exceeds the maximum allowed bytes.",
                    )
                return
            self.rfile = KnownLengthRFile(self.conn.rfile, length)
        writer = self.conn.wfile
        holding = hasattr(writer, "hold")  # a SocketWriter: head and body start go together
        if holding:
            writer.hold()
        try:
            self.server.gateway(self).respond()
            if self.ready:
                self.ensure_headers_sent()
            if self.chunked_write:
                self.conn.wfile.write(b"0\r\n\r\n")
        finally:
            if holding:
                writer.release()

    def simple_response(self, status: int | str, msg: str = "") -> None:
        """cheroot's short answer; an error one (4xx, 5xx) says ``Connection: close``, since
        the connection closes after it."""
        code = str(status)[:3]
        if not code.isdigit() or int(code) < 400 or code in {"413", "414"}:
            super().simple_response(status, msg)  # cheroot marks 413 and 414 itself
            return
        self.close_connection = True
        body = msg.encode("ISO-8859-1")
        head = (
            f"{self.server.protocol} {status}\r\n"
            f"Content-Length: {len(body)}\r\n"
            "Content-Type: text/plain\r\n"
            "Connection: close\r\n\r\n"
        )
        with contextlib.suppress(OSError):
            self.conn.wfile.write(head.encode("ISO-8859-1") + body)

    def send_headers(self) -> None:
        """Drop a short unread body in pieces, or close after the answer (leaving the rest of
        the body to the front's lingering close); then cheroot's."""
        if self.chunked_read:
            if not getattr(self.rfile, "closed", True):
                self._leave_body_unread()
        elif not self._drain():
            self._leave_body_unread()
        super().send_headers()

    def _leave_body_unread(self) -> None:
        """Close after the answer; the connection discards what the client still sends
        (``DirectSocketConnection.close``) so that the client reads the answer."""
        self.close_connection = True
        self.conn.unread_body = True

    def _drain(self) -> bool:
        """Drop the unread body if it is short and here already; False if some is left."""
        rfile = self.rfile
        remaining = getattr(rfile, "remaining", 0)
        if not remaining:
            return True
        if remaining > DRAIN_MAX or self.close_connection:
            return False
        reader = self.conn.rfile
        while rfile.remaining > 0:
            piece = min(rfile.remaining, DRAIN_PIECE)
            if isinstance(reader, SocketReader):
                # Only what the client has sent already: a worker never waits on a body
                # nobody wants.
                dropped = reader.discard_available(piece)
                rfile.remaining -= dropped
            else:  # TLS: cheroot's reader, bounded pieces (``read`` counts them)
                dropped = len(rfile.read(piece))
            if not dropped:
                return False
        return True


__all__ = [
    "CHUNK_LINE_MAX",
    "DRAIN_MAX",
    "BadChunkedBody",
    "BoundedChunkedRFile",
    "BoundedRequest",
    "parse_chunk_size",
]
