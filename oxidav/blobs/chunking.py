"""Content-defined chunking: a byte stream cut by FastCDC into chunks named by BLAKE3.

The chunker is pyfastcdc's compiled FastCDC 2020 (chosen over ``fastcdc`` by
``python -m bench blobs_cdc``: about twice the throughput, and a native streaming ``cut_stream``
that reads into one reusable buffer, so memory stays flat for any content length).

The parameters below decide every chunk boundary ever written, so they are part of the storage
format: changing them does not corrupt anything but stops new content from deduplicating
against old content.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO, cast

import blake3
from pyfastcdc import FastCDC

#: Default FastCDC parameters (pyfastcdc: the mean chunk is about ``CDC_AVG + CDC_MIN``), chosen
#: by ``python -m bench blobs_chunk_params`` (bench/RESULTS.md, "blobs"): 4x fewer chunk files
#: than 64K/256K/1M (a file per chunk is what a local disk pays for), a 4 MiB ceiling (one S3
#: PUT per chunk), and an edit still rewrites only one or two chunks. The settings
#: ``blob_chunk_min`` / ``_avg`` / ``_max`` override them.
CDC_MIN = 256 * 1024
CDC_AVG = 1024 * 1024
CDC_MAX = 4 * 1024 * 1024
#: No chunk may exceed this: S3 stores a chunk with one PUT (no multipart), and an ingest keeps
#: a few chunks in memory.
CHUNK_SIZE_LIMIT = 4 << 20


@dataclass(frozen=True)
class ChunkParams:
    """FastCDC parameters: minimum, average (the mean chunk is about ``avg + min``) and maximum
    chunk size in bytes. Raises ``ValueError`` for values pyfastcdc or the stores cannot use."""

    min_size: int = CDC_MIN
    avg_size: int = CDC_AVG
    max_size: int = CDC_MAX

    def __post_init__(self) -> None:
        if not 64 <= self.min_size <= min(self.avg_size, 1 << 20):
            raise ValueError(f"chunk min {self.min_size} must be in [64, min(avg, 1 MiB)]")
        if not 256 <= self.avg_size <= self.max_size:
            raise ValueError(f"chunk avg {self.avg_size} must be in [256, max]")
        if not 1024 <= self.max_size <= CHUNK_SIZE_LIMIT:
            raise ValueError(f"chunk max {self.max_size} must be in [1 KiB, 4 MiB]")

    def __str__(self) -> str:
        return "/".join(_short(n) for n in (self.min_size, self.avg_size, self.max_size))


def _short(n: int) -> str:
    for unit, shift in (("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


DEFAULT_CHUNK_PARAMS = ChunkParams()


class IncompleteContentError(Exception):
    """The body held fewer or more bytes than the length announced for it."""

    def __init__(self, expected: int, received: int) -> None:
        more = "more" if received > expected else "only"
        super().__init__(f"expected {expected} bytes of content, received {more} {received}")
        self.expected = expected
        self.received = received


@dataclass(frozen=True)
class Chunk:
    """One chunk: its BLAKE3 digest and bytes (a copy, safe to keep)."""

    digest: bytes
    data: bytes

    @property
    def key(self) -> str:
        return self.digest.hex()


class _Source:
    """Adapts a file object or an iterable of byte strings to ``readinto`` for FastCDC, hashing
    the whole content (BLAKE3, optionally MD5) and counting bytes as they pass through."""

    def __init__(
        self,
        source: BinaryIO | Iterable[bytes],
        expected_length: int | None,
        md5: bool,
    ) -> None:
        self._file: BinaryIO | None = None
        self._readinto: Callable[[memoryview], int | None] | None = None
        self._iter: Iterator[bytes] | None = None
        if hasattr(source, "read"):
            self._file = cast(BinaryIO, source)
            self._readinto = getattr(source, "readinto", None)
        else:
            self._iter = iter(source)
        self._pending = memoryview(b"")
        self.expected = expected_length
        # With a known length, read at most one byte past it: enough to detect a long body
        # without draining (or blocking on) whatever follows it in the stream.
        self._limit = None if expected_length is None else expected_length + 1
        self.count = 0
        self.content_hash = blake3.blake3()
        self.md5 = hashlib.md5(usedforsecurity=False) if md5 else None

    def _next_piece(self, want: int) -> memoryview:
        if self._pending:
            return self._pending
        if self._file is not None:
            data = self._file.read(want)
        else:
            assert self._iter is not None
            data = b""
            while not data:
                nxt = next(self._iter, None)
                if nxt is None:
                    break
                data = nxt
        return memoryview(data)

    def readinto(self, buffer: memoryview) -> int:
        want = len(buffer)
        if self._limit is not None:
            want = min(want, self._limit - self.count)
        if want <= 0:
            return 0
        if self._readinto is not None:
            n = self._readinto(buffer[:want]) or 0
        else:
            piece = self._next_piece(want)
            n = min(want, len(piece))
            buffer[:n] = piece[:n]
            self._pending = piece[n:]
        taken = buffer[:n]
        self.count += n
        self.content_hash.update(taken)
        if self.md5 is not None:
            self.md5.update(taken)
        return n

    def check_length(self, final: bool) -> None:
        """Raise ``IncompleteContentError`` if the source already holds more bytes than
        announced, or (``final``) holds a different number of them."""
        if self.expected is None:
            return
        if self.count > self.expected or (final and self.count != self.expected):
            raise IncompleteContentError(self.expected, self.count)


class ChunkedContent:
    """Iterating yields the chunks of ``source`` in order; afterwards ``size``,
    ``content_hash`` and ``md5`` describe the whole content.

    Raises ``IncompleteContentError`` (from the iteration) when ``expected_length`` is given and
    the source holds a different number of bytes; a long source is noticed as soon as it passes
    the announced length.
    """

    def __init__(
        self,
        source: BinaryIO | Iterable[bytes],
        expected_length: int | None = None,
        md5: bool = False,
        params: ChunkParams = DEFAULT_CHUNK_PARAMS,
    ) -> None:
        self._source = _Source(source, expected_length, md5)
        self._params = params
        self._small = expected_length is not None and expected_length <= params.min_size

    def __iter__(self) -> Iterator[Chunk]:
        if self._small:
            yield from self._one_chunk()
            return
        params = self._params
        cdc = FastCDC(params.avg_size, min_size=params.min_size, max_size=params.max_size)
        source = self._source
        for piece in cdc.cut_stream(source):
            source.check_length(final=False)
            data = bytes(piece.data)  # the chunker reuses its buffer
            yield Chunk(blake3.blake3(data).digest(), data)
        source.check_length(final=True)

    def _one_chunk(self) -> Iterator[Chunk]:
        """A content announced no longer than the minimum chunk is one chunk, as FastCDC would
        cut it, read into one buffer without setting up the chunker (whose multi-MiB buffer
        costs more than a small PUT's hashing)."""
        source = self._source
        assert source.expected is not None
        buffer = bytearray(source.expected + 1)  # one byte more shows a long body
        view = memoryview(buffer)
        filled = 0
        while filled < len(buffer):
            n = source.readinto(view[filled:])
            if not n:
                break
            filled += n
        source.check_length(final=True)
        if filled:
            data = bytes(view[:filled])
            yield Chunk(blake3.blake3(data).digest(), data)

    @property
    def size(self) -> int:
        return self._source.count

    @property
    def content_hash(self) -> str:
        return self._source.content_hash.hexdigest()

    @property
    def md5(self) -> str | None:
        return None if self._source.md5 is None else self._source.md5.hexdigest()


def chunk_bytes(data: bytes, params: ChunkParams = DEFAULT_CHUNK_PARAMS) -> list[Chunk]:
    """The chunks of an in-memory byte string (tests and tools)."""
    return list(ChunkedContent([data], params=params))


__all__ = [
    "CDC_AVG",
    "CDC_MAX",
    "CDC_MIN",
    "CHUNK_SIZE_LIMIT",
    "DEFAULT_CHUNK_PARAMS",
    "Chunk",
    "ChunkParams",
    "ChunkedContent",
    "IncompleteContentError",
    "chunk_bytes",
]
