"""``FileRegion``: a part of an open blob file, handed out instead of its bytes.

A local chunk read whole for an HTTP response is checked through its open file (``feed``: BLAKE3
over positioned reads into one small buffer, a piece at a time, so the bytes stay in the CPU's
cache between the read and the hash; the buffer lives for the call, so no thread keeps one) and
then sent by the server with ``sendfile(2)`` from the same open file: the kernel hands
page-cache pages to the socket, so the bytes are never copied through the process for the
answer (``oxidav.http_connection.BufferGateway``). ``view`` and ``bytes()`` give the same bytes
to anything else, from a mapping made when first asked for.

A region owns its descriptor and its mapping, if one was made: ``close`` (or the end of the
last reference) releases both. The file behind it is never changed in place — chunk files are
written under a new inode, replaced by rename and removed by unlink — so what was checked is
what is sent.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from collections.abc import Callable

#: Fault a mapping's pages in when it is made (Linux), not one fault per few pages later.
_MAP_POPULATE: int = getattr(mmap, "MAP_POPULATE", 0)
#: The most a region is read at once to check it (``FileRegion.feed``).
FEED_PIECE = 256 * 1024


class FileRegion:
    """Bytes ``[offset, offset + length)`` of the open file ``fd`` (mapped for ``view``)."""

    __slots__ = ("_map", "fd", "length", "offset")

    def __init__(self, fd: int, size: int) -> None:
        """The whole file ``fd`` of ``size`` bytes; the region takes over the descriptor."""
        self.fd = fd
        self.offset = 0
        self.length = size
        self._map: mmap.mmap | None = None

    @classmethod
    def open(cls, path: str) -> FileRegion:
        """The whole file at ``path`` (``FileNotFoundError`` if there is none)."""
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            size = os.fstat(fd).st_size
        except BaseException:
            os.close(fd)
            raise
        return cls(fd, size)

    def __len__(self) -> int:
        return self.length

    def __repr__(self) -> str:
        return f"<FileRegion fd={self.fd} [{self.offset}, {self.offset + self.length})>"

    @property
    def view(self) -> memoryview:
        """The region's bytes, read-only, straight from a mapping of the whole file (made on
        the first call; empty once the region is closed)."""
        if self._map is None:
            if self.fd < 0 or not (self.offset + self.length):
                return memoryview(b"")
            self._map = mmap.mmap(
                self.fd,
                self.offset + self.length,
                flags=mmap.MAP_SHARED | _MAP_POPULATE,
                prot=mmap.PROT_READ,
            )
        return memoryview(self._map)[self.offset : self.offset + self.length]

    def feed(self, update: Callable[[memoryview], object]) -> int:
        """Hand the region's bytes to ``update`` (a hasher's), in order, a piece of at most
        ``FEED_PIECE`` bytes at a time, read with ``pread`` into one buffer; returns how many
        bytes were read (fewer than ``length`` if the file ends early). A piece is only valid
        during its call."""
        buffer = memoryview(bytearray(min(FEED_PIECE, self.length)))
        position, end = self.offset, self.offset + self.length
        while position < end:
            read = os.preadv(self.fd, [buffer[: min(FEED_PIECE, end - position)]], position)
            if not read:
                break
            update(buffer[:read])
            position += read
        return position - self.offset

    def __bytes__(self) -> bytes:
        return bytes(self.view)

    def narrow(self, lo: int, hi: int) -> FileRegion:
        """Keep only bytes ``[lo, hi)`` of the region (offsets within it); returns itself."""
        if not 0 <= lo <= hi <= self.length:
            raise ValueError(f"[{lo}, {hi}) is not within a region of {self.length} bytes")
        self.offset += lo
        self.length = hi - lo
        return self

    def close(self) -> None:
        """Release the mapping and the descriptor (idempotent). A view still held elsewhere
        keeps the mapping alive until it is released."""
        mapping, self._map = self._map, None
        if mapping is not None:
            # A view still out keeps the mapping; it goes with the last one.
            with contextlib.suppress(BufferError):
                mapping.close()
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def __del__(self) -> None:
        self.close()

    def __enter__(self) -> FileRegion:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


__all__ = ["FileRegion"]
