"""A raw-socket HTTP/1.1 client that checks the framing of every answer.

``exchange`` sends one request (bytes as given: no normalisation of the path or headers) and
reads the answer as a strict client would: a status line, headers, then exactly the body the
headers announce (``Content-Length`` bytes, or chunked framing to its last chunk). Unless the
server said ``Connection: close``, a second request is sent on the same connection and must be
answered too — a short body, a missing body or leftover bytes show up there. Every failure is
a ``FramingError`` naming what was wrong; a server that never answers is a ``FramingError`` too
(after ``timeout`` seconds of silence).
"""

from __future__ import annotations

import base64
import socket
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass

TIMEOUT = 8.0
MAX_ANSWER = 64 << 20
CREDENTIALS = "Basic " + base64.b64encode(b"alice:secret").decode()


class FramingError(AssertionError):
    """The answer was missing, dropped or not framed as its headers say."""


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    closes: bool


def build_request(
    method: str,
    target: bytes | str,
    headers: Mapping[str, str] | None = None,
    body: bytes = b"",
    *,
    content_length: int | None = None,
    authenticate: bool = True,
) -> bytes:
    """The bytes of one request; ``content_length`` overrides the true body length."""
    if isinstance(target, str):
        target = target.encode("utf-8", "surrogateescape")
    lines = [method.encode("ascii") + b" " + target + b" HTTP/1.1", b"Host: 127.0.0.1"]
    all_headers = dict(headers or {})
    if authenticate:
        all_headers.setdefault("Authorization", CREDENTIALS)
    if "Transfer-Encoding" not in all_headers:
        length = len(body) if content_length is None else content_length
        all_headers.setdefault("Content-Length", str(length))
    for name, value in all_headers.items():
        lines.append(f"{name}: {value}".encode("utf-8", "surrogateescape"))
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


class _Reader:
    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = b""
        self.received = 0

    def _more(self, what: str) -> None:
        try:
            data = self._sock.recv(65536)
        except TimeoutError as exc:
            raise FramingError(f"no more bytes while reading {what} (timeout)") from exc
        except ConnectionResetError as exc:
            raise FramingError(f"connection reset while reading {what}") from exc
        if not data:
            raise FramingError(f"connection closed while reading {what}")
        self._buffer += data
        self.received += len(data)
        if len(self._buffer) > MAX_ANSWER:
            raise FramingError("answer larger than the client's limit")

    def line(self, what: str) -> bytes:
        while b"\r\n" not in self._buffer:
            self._more(what)
        line, self._buffer = self._buffer.split(b"\r\n", 1)
        return line

    def exactly(self, size: int, what: str) -> bytes:
        while len(self._buffer) < size:
            self._more(f"{what} ({len(self._buffer)} of {size} bytes)")
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data

    def leftover(self) -> bytes:
        return self._buffer


def _read_answer(reader: _Reader, method: str) -> Answer:
    status_line = reader.line("the status line")
    parts = status_line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise FramingError(f"bad status line {status_line[:200]!r}")
    status = int(parts[1])
    headers: dict[str, str] = {}
    while True:
        line = reader.line("the headers")
        if not line:
            break
        name, sep, value = line.partition(b":")
        if not sep:
            raise FramingError(f"bad header line {line[:200]!r}")
        key = name.decode("latin-1").strip().lower()
        if key in headers and key in {"content-length", "transfer-encoding"}:
            raise FramingError(f"repeated {key} header")
        headers[key] = value.decode("latin-1").strip()
    closes = "close" in headers.get("connection", "").lower() or parts[0] == b"HTTP/1.0"
    if method == "HEAD" or status in {204, 304} or 100 <= status < 200:
        return Answer(status, headers, b"", closes)
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = bytearray()
        while True:
            size_line = reader.line("a chunk-size line")
            try:
                size = int(size_line.split(b";", 1)[0].strip(), 16)
            except ValueError as exc:
                raise FramingError(f"bad chunk-size line {size_line[:100]!r}") from exc
            if size == 0:
                while reader.line("the trailer"):
                    pass
                return Answer(status, headers, bytes(body), closes)
            body += reader.exactly(size, "a chunk")
            if reader.exactly(2, "a chunk's CRLF") != b"\r\n":
                raise FramingError("chunk not followed by CRLF")
    if "content-length" in headers:
        value = headers["content-length"]
        if not value.isdigit():
            raise FramingError(f"bad Content-Length {value!r}")
        return Answer(status, headers, reader.exactly(int(value), "the body"), closes)
    if not closes:
        raise FramingError(f"{status} answer with neither Content-Length, chunked nor close")
    while True:
        try:
            reader._more("the body")
        except FramingError:
            return Answer(status, headers, reader.leftover(), True)


def exchange(
    port: int,
    request: bytes,
    method: str,
    *,
    keepalive_check: bool = True,
    half_close: bool = False,
    timeout: float = TIMEOUT,
) -> Answer:
    """Send ``request``, read its answer strictly, then (unless the server closes) check that a
    second request on the same connection is answered too. ``half_close`` shuts the client's
    sending side after the request (for bodies shorter than announced): the server may then
    answer or close, but must not answer 5xx or mis-frame."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        # A server that refuses early may close before all is sent: its answer is still read.
        with suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(request)
        reader = _Reader(sock)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
            try:
                return _read_answer(reader, method)
            except FramingError:
                if reader.received == 0:
                    return Answer(0, {}, b"", True)  # closed without a word: allowed here
                raise
        answer = _read_answer(reader, method)
        if answer.closes or not keepalive_check:
            return answer
        sock.sendall(build_request("OPTIONS", "/remote.php/dav/", authenticate=False))
        follow = _read_answer(reader, "OPTIONS")
        if follow.status >= 500:
            raise FramingError(f"the follow-up request on the connection got {follow.status}")
        return answer
