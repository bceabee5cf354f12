"""A streaming ``multipart/related`` reader for bulk upload (RFC 2046 §5.1, RFC 2387).

The body is never held in memory: ``MultipartReader.parts`` yields one ``Part`` at a time, whose
``body`` iterator reads exactly the part's ``Content-Length`` bytes from the request stream
(Nextcloud's bulk format requires that header on every part, so no boundary scanning inside
bodies is needed). Anything that does not follow the format raises ``MultipartError`` with the
reason, which the endpoint logs and answers with 400. A body that stops early (desktop clients
before 3.9 abort a batch holding an empty file after sending the request head or part of the
body, see ``oxidav.nextcloud.client_version``) is reported as ending early, never as a
malformed header: a line cut by the end of the body is not parsed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

BLOCK = 256 * 1024
MAX_LINE = 8 * 1024
MAX_HEADERS = 64

_BOUNDARY = re.compile(r';\s*boundary\s*=\s*(?:"([^"]+)"|([^;\s]+))', re.IGNORECASE)


class MultipartError(ValueError):
    """The request body is not a well-formed bulk multipart body."""


def boundary_of(content_type: str) -> str:
    """The (possibly quoted) ``boundary`` parameter of a ``multipart/related`` Content-Type."""
    media = content_type.split(";", 1)[0].strip().lower()
    if not media.startswith("multipart/"):
        raise MultipartError(f"Content-Type {media!r} is not multipart")
    match = _BOUNDARY.search(content_type)
    if match is None:
        raise MultipartError("multipart Content-Type without a boundary")
    boundary = match.group(1) or match.group(2)
    if not 1 <= len(boundary) <= 70:
        raise MultipartError("boundary must have 1 to 70 characters")
    return boundary


class _Stream:
    """A buffered reader over at most ``limit`` bytes of a stream (None: until EOF)."""

    def __init__(self, raw: BinaryIO, limit: int | None) -> None:
        self._raw = raw
        self._left = limit
        self._buffer = b""

    def _fill(self) -> bool:
        if self._left == 0:
            return False
        size = BLOCK if self._left is None else min(BLOCK, self._left)
        data = self._raw.read(size)
        if not data:
            self._left = 0
            return False
        if self._left is not None:
            self._left -= len(data)
        self._buffer += data
        return True

    def read_line(self) -> bytes:
        """One line including its LF (or the rest of the stream); at most ``MAX_LINE`` bytes."""
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line, self._buffer = self._buffer[: end + 1], self._buffer[end + 1 :]
                return line
            if len(self._buffer) > MAX_LINE:
                raise MultipartError("header line too long")
            if not self._fill():
                line, self._buffer = self._buffer, b""
                return line

    def read_exact(self, n: int) -> Iterator[bytes]:
        """Exactly ``n`` bytes, in pieces; ``MultipartError`` if the stream ends first."""
        while n > 0:
            if not self._buffer and not self._fill():
                raise MultipartError("body ends inside a part")
            piece = self._buffer[:n]
            self._buffer = self._buffer[len(piece) :]
            n -= len(piece)
            yield piece

    def drain(self) -> None:
        self._buffer = b""
        while self._fill():
            self._buffer = b""


@dataclass
class Part:
    """One body part: lower-cased header names, and its body (iterate it exactly once)."""

    headers: dict[str, str]
    length: int
    body: Iterator[bytes]


def _strip_eol(line: bytes) -> bytes:
    return line.rstrip(b"\r\n").rstrip(b" \t")


class MultipartReader:
    def __init__(self, stream: BinaryIO, boundary: str, limit: int | None) -> None:
        self._stream = _Stream(stream, limit)
        self._delimiter = b"--" + boundary.encode("latin-1")

    def parts(self) -> Iterator[Part]:
        """The parts in order. The caller must exhaust (or drop) each part's body before
        asking for the next one; leftovers are skipped."""
        self._skip_preamble()
        while True:
            headers = self._headers()
            raw_length = headers.get("content-length", "").strip()
            if not raw_length.isdigit():
                raise MultipartError("a part has no valid Content-Length")
            length = int(raw_length)
            body = self._stream.read_exact(length)
            yield Part(headers, length, body)
            for _ in body:  # the caller may have stopped early
                pass
            if self._after_part():
                return

    def drain(self) -> None:
        """Read and drop the rest of the request body (so the connection stays usable)."""
        self._stream.drain()

    def _skip_preamble(self) -> None:
        for _ in range(MAX_HEADERS):
            line = self._stream.read_line()
            if not line.endswith(b"\n"):
                raise MultipartError("body ends before the opening boundary")
            if _strip_eol(line) == self._delimiter:
                return
        raise MultipartError("no opening boundary near the start of the body")

    def _headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        for _ in range(MAX_HEADERS + 1):
            line = self._stream.read_line()
            if not line.endswith(b"\n"):
                raise MultipartError("body ends inside part headers")
            text = line.rstrip(b"\r\n")
            if not text:
                return headers
            name, sep, value = text.partition(b":")
            if not sep or not name.strip():
                raise MultipartError(f"malformed part header {text[:60]!r}")
            try:
                decoded = value.strip().decode("utf-8")
            except UnicodeDecodeError:
                raise MultipartError("part header is not UTF-8") from None
            headers[name.strip().decode("latin-1").lower()] = decoded
        raise MultipartError("too many part headers")

    def _after_part(self) -> bool:
        """Consume the CRLF and delimiter after a body; True if it was the close delimiter."""
        line = self._stream.read_line()
        if line in (b"\r\n", b"\n"):
            line = self._stream.read_line()
        text = _strip_eol(line)
        if text == self._delimiter + b"--":
            return True
        if text == self._delimiter and line.endswith(b"\n"):
            return False
        if not line.endswith(b"\n"):
            raise MultipartError("body ends without the closing boundary")
        raise MultipartError("a part is longer than its Content-Length")
