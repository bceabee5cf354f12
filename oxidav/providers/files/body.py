"""A PUT's request body as a file object with ``readinto``, reading no byte past its length.

The blob ingest fills FastCDC's buffer with ``readinto``. Under cheroot, ``wsgi.input`` is a
``KnownLengthRFile`` over the connection's reader, whose ``read(n)`` makes ``bytes`` the
ingest then copies once more into its own buffer (cheroot's own ``_pyio.BufferedReader``
allocates, receives, copies, joins and slices: three or four copies of every body byte).
``SocketBody`` receives straight into the caller's buffer instead (whatever the reader had
already buffered is handed over first): through ``SocketReader.readinto`` on oxidav's own
connections, through the ``_pyio`` reader's buffer and raw socket otherwise (TLS). It keeps
cheroot's bookkeeping (bytes left of the body, bytes read on the connection) exact, so
keep-alive and the rest of the request work as before. Any other ``wsgi.input`` (a chunked
body, a checksum-verifying wrapper, a test harness) goes through ``StreamBody``: ``read``
bounded by the length, copied into the buffer.
"""

from __future__ import annotations

from typing import Any, Protocol

from cheroot.server import KnownLengthRFile

from oxidav.http_reader import SocketReader

#: The largest single ``read`` of ``StreamBody`` (a chunked body or a wrapped stream).
READ_BLOCK = 256 * 1024


class Body(Protocol):
    def readinto(self, buffer: memoryview | bytearray) -> int: ...

    def read(self, size: int = -1) -> bytes: ...


class StreamBody:
    """``readinto`` over any stream with ``read``; at most ``length`` bytes (None: until the
    stream ends, e.g. a chunked body)."""

    def __init__(self, stream: Any, length: int | None) -> None:
        self._stream = stream
        self._remaining = length

    def readinto(self, buffer: memoryview | bytearray) -> int:
        want = min(len(buffer), READ_BLOCK)
        if self._remaining is not None:
            want = min(want, self._remaining)
        if want <= 0:
            return 0
        data = self._stream.read(want)
        n = len(data)
        if n > want:  # a stream that ignores the size it was given
            raise ValueError("the request body stream returned more than asked for")
        memoryview(buffer)[:n] = data
        if self._remaining is not None:
            self._remaining -= n
        return n

    def read(self, size: int = -1) -> bytes:
        buffer = bytearray(READ_BLOCK if size < 0 else size)
        n = self.readinto(buffer)
        del buffer[n:]
        return bytes(buffer)


class SocketBody(StreamBody):
    """cheroot's body of known length, received straight into the caller's buffer."""

    def __init__(self, stream: Any, length: int | None) -> None:
        super().__init__(stream, length)
        self._known = stream
        self._reader = stream.rfile

    @classmethod
    def fits(cls, stream: Any) -> bool:
        """Whether ``stream`` is the cheroot body this class knows the insides of."""
        if type(stream) is not KnownLengthRFile:
            return False
        reader = getattr(stream, "rfile", None)
        if not isinstance(getattr(stream, "remaining", None), int):
            return False
        if isinstance(reader, SocketReader):
            return True
        return all(
            hasattr(reader, name) for name in ("_read_buf", "_read_pos", "raw", "bytes_read")
        )

    def readinto(self, buffer: memoryview | bytearray) -> int:
        known, reader = self._known, self._reader
        want: int = min(len(buffer), known.remaining)
        if self._remaining is not None:
            want = min(want, self._remaining)
        if want <= 0:
            return 0
        view = memoryview(buffer)
        if isinstance(reader, SocketReader):
            n = reader.readinto(view[:want])  # counts its own bytes_read
        else:
            n = self._readinto_pyio(reader, view, want)
        known.remaining -= n
        if self._remaining is not None:
            self._remaining -= n
        return n

    @staticmethod
    def _readinto_pyio(reader: Any, view: memoryview, want: int) -> int:
        """cheroot's ``_pyio`` reader: its buffer first, else its raw socket."""
        pending: int = len(reader._read_buf) - reader._read_pos
        if pending > 0:
            n = min(want, pending)
            start: int = reader._read_pos
            view[:n] = reader._read_buf[start : start + n]
            reader._read_pos = start + n
        else:
            n = int(reader.raw.readinto(view[:want]) or 0)
        reader.bytes_read += n
        return n


def request_body(environ: dict[str, Any], length: int | None) -> Body:
    """The body of this request as a ``readinto`` file object of at most ``length`` bytes."""
    stream = environ["wsgi.input"]
    if length is not None and SocketBody.fits(stream):
        return SocketBody(stream, length)
    return StreamBody(stream, length)
