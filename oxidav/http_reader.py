"""``SocketReader``: the read side of a connection (plain TCP or an ``ssl.SSLSocket`` whose
handshake is done), in place of cheroot's reader.

cheroot reads every request through ``cheroot.makefile.StreamReader``, a pure-Python
``BufferedReader`` that peeks and copies its way through the buffer a piece at a time.
``SocketReader`` receives into one ``bytes`` buffer and cuts lines with ``bytes.find`` and
slices. It keeps what cheroot
asks of its reader: ``readline(size)``, ``read(size)`` (blocks until ``size`` bytes or the end
of the stream), iteration by lines, ``has_data()`` (a pipelined request is already buffered,
so the connection is served again at once instead of waiting in the selector), ``bytes_read``
and ``close``. ``readinto`` hands a request body straight to the caller's buffer
(``oxidav.providers.files.body``).

Errors are the socket's own: a timeout raises ``TimeoutError`` (cheroot answers 408 or drops
the idle connection), a reset raises ``ConnectionResetError``, and the end of the stream reads
as ``b""``.
"""

from __future__ import annotations

import enum
import select
import socket
import ssl

#: Bytes asked of the socket when the buffer runs dry (cheroot's reader used 8 KiB).
RECV_SIZE = 64 * 1024
#: ``read(size)`` allocates at most this much before bytes arrive; it doubles its buffer as
#: they do, so memory follows what the client sent, not the size it announced.
READ_STEP = 1 << 20
#: ``readline()`` with no size stops here: cheroot calls it so only for a chunked body's size
#: and trailer lines, which are a few bytes long; a longer one is refused by cheroot's parser
#: either way, and the buffer does not grow without bound while it waits for a newline.
UNSIZED_LINE_MAX = 64 * 1024


def tls_pending(sock: socket.socket) -> bool:
    """Whether a TLS socket holds decrypted bytes nobody read (``select`` cannot see them)."""
    return isinstance(sock, ssl.SSLSocket) and sock.pending() > 0


class HeadState(enum.Enum):
    """Where the next request head stands in what a ``SocketReader`` has buffered."""

    #: Nothing buffered but, at most, the CRLF a chunked body leaves behind.
    EMPTY = "empty"
    #: Part of a head: the connection waits for more.
    PARTIAL = "partial"
    #: The head's closing empty line is buffered: parsing it will not block.
    COMPLETE = "complete"
    #: More than the allowed head size is buffered without a closing empty line.
    TOO_LARGE = "too large"
    #: The client closed its side (or the connection failed).
    CLOSED = "closed"


class SocketReader:
    """Buffered reads of ``sock``: lines and sized reads sliced from one buffer."""

    def __init__(self, sock: socket.socket, recv_size: int = RECV_SIZE) -> None:
        self._sock = sock
        self._recv_size = recv_size
        self._buf = b""
        self._pos = 0
        self.bytes_read = 0
        #: True once ``close`` ran (cheroot's worker pool looks before it cuts a connection).
        self.closed = False

    def has_data(self) -> bool:
        """Whether bytes already received wait to be read."""
        return self._pos < len(self._buf)

    def _fill(self) -> bool:
        """Receive more behind what is buffered; False at the end of the stream."""
        data = self._sock.recv(self._recv_size)
        if not data:
            return False
        if self._pos < len(self._buf):
            self._buf = self._buf[self._pos :] + data
        else:
            self._buf = data
        self._pos = 0
        return True

    def _take(self, stop: int) -> bytes:
        piece = self._buf[self._pos : stop]
        self._pos = stop
        self.bytes_read += len(piece)
        return piece

    def readline(self, size: int | None = -1) -> bytes:
        """One line with its ``\\n``, at most ``size`` bytes; shorter at the end of the
        stream."""
        limit = UNSIZED_LINE_MAX if size is None or size < 0 else size
        while True:
            buf, pos = self._buf, self._pos
            end = buf.find(b"\n", pos, pos + limit)
            if end >= 0:
                return self._take(end + 1)
            if len(buf) - pos >= limit:
                return self._take(pos + limit)
            if not self._fill():
                return self._take(len(self._buf))

    def read(self, size: int | None = -1) -> bytes:
        """``size`` bytes (fewer only at the end of the stream); all that is left when
        ``size`` is None or negative."""
        if size is None or size < 0:
            pieces = [self._take(len(self._buf))]
            while data := self._sock.recv(self._recv_size):
                self.bytes_read += len(data)
                pieces.append(data)
            return b"".join(pieces)
        available = len(self._buf) - self._pos
        if available >= size:
            return self._take(self._pos + size)
        if size < self._recv_size:
            while len(self._buf) - self._pos < size and self._fill():
                pass
            return self._take(min(len(self._buf), self._pos + size))
        # Grow the result only as bytes arrive: a client announcing a large body and
        # sending little costs what it sent, not what it announced.
        out = bytearray(min(size, READ_STEP))
        got = 0
        while got < size:
            if got == len(out):
                out.extend(bytes(min(len(out), size - got)))
            with memoryview(out) as view:
                received = self.readinto(view[got:])
            if not received:
                break
            got += received
        del out[got:]
        return bytes(out)

    def head_state(self, max_bytes: int) -> HeadState:
        """Whether a whole request head of at most ``max_bytes`` is buffered."""
        return self._head_state(0, max_bytes)

    def receive_head(self, max_bytes: int) -> HeadState:
        """One receive behind what is buffered (call it when the socket is readable, it
        blocks otherwise; a non-blocking TLS socket that has only part of a record receives
        nothing), then ``head_state``; only the new bytes are searched."""
        start = max(len(self._buf) - self._pos - 3, 0)
        try:
            received = self._fill()
        except (ssl.SSLWantReadError, BlockingIOError):
            # A non-blocking TLS socket with half a record: nothing new yet.
            return self._head_state(start, max_bytes)
        except OSError:
            return HeadState.CLOSED
        return self._head_state(start, max_bytes) if received else HeadState.CLOSED

    def _head_state(self, start: int, max_bytes: int) -> HeadState:
        buf, pos = self._buf, self._pos
        unread = len(buf) - pos
        if not unread or (unread == 2 and buf.endswith(b"\r\n")):
            return HeadState.EMPTY
        # The head ends with an empty line: CRLF CRLF, or LF LF which cheroot refuses with a
        # 400 (either way the parser will not wait for more bytes).
        end = buf.find(b"\n\r\n", pos + start, pos + max_bytes)
        if end < 0:
            end = buf.find(b"\n\n", pos + start, pos + max_bytes)
        if end >= 0:
            return HeadState.COMPLETE
        return HeadState.TOO_LARGE if unread >= max_bytes else HeadState.PARTIAL

    def discard_available(self, limit: int) -> int:
        """Drop up to ``limit`` bytes that are here now: buffered ones, else one receive if the
        socket is readable at once. 0 when nothing is here now or at the end of the stream."""
        available = len(self._buf) - self._pos
        if available:
            n = min(limit, available)
            self._take(self._pos + n)
            return n
        ready, _, _ = select.select([self._sock], [], [], 0)
        if not ready:
            return 0
        data = self._sock.recv(min(limit, self._recv_size))
        self.bytes_read += len(data)
        return len(data)

    def readinto(self, buffer: memoryview | bytearray) -> int:
        """Up to ``len(buffer)`` bytes into ``buffer``: what is buffered, else one receive
        straight into it; 0 at the end of the stream."""
        want = len(buffer)
        if not want:
            return 0
        available = len(self._buf) - self._pos
        if available:
            n = min(want, available)
            start = self._pos
            memoryview(buffer)[:n] = memoryview(self._buf)[start : start + n]
            self._pos = start + n
            self.bytes_read += n
            return n
        n = self._sock.recv_into(buffer, want)
        self.bytes_read += n
        return n

    def __iter__(self) -> SocketReader:
        return self

    def __next__(self) -> bytes:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def close(self) -> None:
        """Drop what is buffered (the connection closes the socket)."""
        self._buf = b""
        self._pos = 0
        self.closed = True


__all__ = ["READ_STEP", "RECV_SIZE", "HeadState", "SocketReader", "tls_pending"]
