"""Upload checksums: the ``OC-Checksum: <TYPE>:<hex>`` header, verified while the body streams.

The desktop client sends ``OC-Checksum: SHA1:<hex>`` with uploads when the server advertises
``checksums.supportedTypes`` (docs/nextcloud-protocol.md#capabilities, #uploads). ``VerifyingInput``
wraps
``wsgi.input``: it hashes every byte handed to the reader and, on the read that completes the
body (the declared Content-Length is reached, or end of stream), compares the digest and
raises ``ChecksumMismatch`` instead of returning the last bytes. The reader (the files
provider's ingest) therefore fails before it can commit anything: a mismatch stores nothing.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Callable
from typing import Any, BinaryIO

from oxidav.nextcloud.capabilities import CHECKSUM_TYPES


class ChecksumError(ValueError):
    """An ``OC-Checksum`` header that names no supported algorithm or is not hex."""


class ChecksumMismatch(ValueError):
    """The body's digest differs from the declared one."""


class _Adler32:
    def __init__(self) -> None:
        self.value = 1

    def update(self, data: bytes) -> None:
        self.value = zlib.adler32(data, self.value)

    def hexdigest(self) -> str:
        return f"{self.value:08x}"


_FACTORIES: dict[str, Callable[[], Any]] = {
    "SHA1": hashlib.sha1,
    "MD5": hashlib.md5,
    "ADLER32": _Adler32,
}
assert set(_FACTORIES) == set(CHECKSUM_TYPES)


def parse_checksum(header: str) -> tuple[str, str]:
    """``"SHA1:AB12…"`` -> ``("SHA1", "ab12…")``. Raises ``ChecksumError``."""
    kind, sep, digest = header.strip().partition(":")
    kind = kind.upper()
    if not sep or kind not in _FACTORIES:
        raise ChecksumError(f"unsupported checksum {header.strip()[:40]!r}")
    digest = digest.strip().lower()
    try:
        int(digest, 16)
    except ValueError:
        raise ChecksumError("checksum is not hexadecimal") from None
    return kind, digest


def new_hasher(kind: str) -> Any:
    """A hashlib-like object (``update``, ``hexdigest``) for one of ``CHECKSUM_TYPES``."""
    return _FACTORIES[kind]()


def format_checksum(kind: str, digest: str) -> str:
    """The stored / served form, ``"SHA1:<hex>"`` (``oc:checksums``, ``OC-Checksum``)."""
    return f"{kind}:{digest}"


class VerifyingInput:
    """A ``wsgi.input`` that checks the body against an ``OC-Checksum`` as it is read."""

    def __init__(self, stream: BinaryIO, kind: str, digest: str, length: int | None) -> None:
        self._stream = stream
        self._kind = kind
        self._digest = digest
        self._remaining = length
        self._hasher = new_hasher(kind)
        self._done = False

    def read(self, size: int = -1) -> bytes:
        if self._done:
            return b""
        if self._remaining is not None and (size < 0 or size > self._remaining):
            size = self._remaining
        data = self._stream.read(size) if size != 0 else b""
        self._hasher.update(data)
        if self._remaining is not None:
            self._remaining -= len(data)
        if not data or self._remaining == 0:
            self._done = True
            self._check()
        return data

    def readline(self, size: int = -1) -> bytes:
        return self.read(size if size >= 0 else 64 * 1024)

    def _check(self) -> None:
        actual = self._hasher.hexdigest()
        if actual != self._digest:
            raise ChecksumMismatch(
                f"{self._kind} checksum mismatch: declared {self._digest}, body has {actual}"
            )
