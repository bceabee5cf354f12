"""``ContentReader``: a readable, seekable file object over one manifest's chunks.

Chunk lists come from the process's ``ManifestCache`` (``oxidav.blobs.manifest_cache``): a
manifest never changes, so its entries are read from the database once per 256 MiB of content
and a read of a known content makes no query at all. ``iter_range`` streams a byte range (an
HTTP Range GET) and fetches ahead while the current chunk is sent: on a remote store the next
few chunks in parallel, on a local one (``concurrency`` 1) the next chunk on one thread once the
range is ``READ_AHEAD_FROM`` or longer, so reading and hashing a chunk overlap sending the one
before (a whole 512 MiB GET: the server's one busy thread spent a third of its time reading and
hashing). A chunk it reads whole is read in pieces of the block size and hashed as they come,
so its bytes are served without a copy. A caller that takes ``FileRegion`` pieces (``regions``:
oxidav's own HTTP gateway) gets such a chunk of a local store, if it is at least
``REGION_FROM`` bytes, as one region of its file (``LocalBlobStore.region``): hashed through
one small buffer that stays in the CPU's cache (``FileRegion.feed``) and sent with
``sendfile``, so the answer's bytes are never copied through the process (a 512 MiB GET: a
fifth of the server's CPU was the read's copy into the process, a sixth the send's copy out of
it). A smaller chunk is read: a region has a fixed cost that a few KiB of copying does not
reach (a small file's GET). A chunk of at most ``INLINE_LIMIT`` bytes is looked up in its
database row first (``oxidav.blobs.inline``: small contents keep their one chunk there), and
is checked the same way.

Integrity policy:

* A chunk read whole — every chunk ``read``/``readinto`` touches, and every chunk ``iter_range``
  needs at least half of — is checked against its BLAKE3 name and length before a single byte
  of it is returned (``fetch_chunk``, ``fetch_verified``): a corrupt or missing chunk raises,
  it is never served.
* A range that needs less than half of a chunk (``PARTIAL_BELOW``; the first and last chunk of a
  small Range GET) reads only those bytes from the store (``get_range``: a positioned read on
  disk, a ranged GET on S3) and checks only their length (a truncated chunk still raises).
  Their hash cannot be checked: BLAKE3 covers the whole chunk, and reading and hashing a whole
  chunk (1.25 MiB on average, up to 4 MiB) to serve 64 KiB costs ~20x the bytes. Bit rot inside
  such a range would reach that client undetected, as it would from a plain file server; it is
  caught by the next whole read of the chunk (a full GET, a sync client's download) and by
  ``oxidav blobs fsck --deep``, which re-hashes every chunk. The encrypted store still
  authenticates every byte it returns (AES-GCM over the whole blob), and the cache decorator
  serves ranges from its verified whole copy. No verified-chunk cache is kept: verifying "the
  first time" would mean reading the whole chunk the first time, which is the cost avoided.
"""

from __future__ import annotations

import collections
import io
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol, runtime_checkable

import blake3

from oxidav.blobs.inline import InlineChunks
from oxidav.blobs.manifest_cache import ManifestCache, cache_for
from oxidav.blobs.manifests import ManifestEntry
from oxidav.blobs.regions import FileRegion
from oxidav.blobs.store import BlobIntegrityError, BlobStore, check_chunk
from oxidav.db import Database

DEFAULT_BLOCK = 256 * 1024
#: Entries per page of the old paged reader (``bench/blobs_range_read.py``'s BEFORE copy).
ENTRY_PAGE = 256
#: A range needing less than this fraction of a chunk reads only its bytes (unhashed).
PARTIAL_BELOW = 0.5
#: On a store without parallel reads, a range at least this long reads the next chunk ahead.
READ_AHEAD_FROM = 4 * 1024 * 1024
#: A chunk read whole goes out as a ``FileRegion`` (sent with ``sendfile``) from this
#: size on; a smaller one is read, which costs less (bench/RESULTS.md).
REGION_FROM = 256 * 1024


def fetch_chunk(
    store: BlobStore, entry: ManifestEntry, inline: InlineChunks | None = None
) -> bytes:
    """The chunk of ``entry``, verified: raises ``BlobIntegrityError`` unless its length and
    BLAKE3 match the manifest, ``BlobNotFoundError`` if it is missing. ``inline``: where a
    small chunk kept in the database is found first."""
    if inline is not None and (kept := inline.get(entry)) is not None:
        return kept
    return check_chunk(entry.chunk_hash, entry.size, store.get(entry.chunk_hash))


def fetch_part(
    store: BlobStore,
    entry: ManifestEntry,
    lo: int,
    hi: int,
    block: int = DEFAULT_BLOCK,
    regions: bool = False,
    inline: InlineChunks | None = None,
) -> list[bytes]:
    """Bytes ``[lo, hi)`` of the chunk of ``entry`` (offsets within the chunk) as pieces of at
    most ``block`` bytes. Less than ``PARTIAL_BELOW`` of the chunk is read alone and
    length-checked; more, the whole chunk is read and verified first (``fetch_verified``). See
    the module docstring for the policy. ``inline``: where a small chunk kept in the database
    is found first (checked whole: it is at most ``INLINE_LIMIT`` bytes)."""
    if inline is not None and (kept := inline.get(entry)) is not None:
        return [kept[lo:hi]]
    if (hi - lo) >= entry.size * PARTIAL_BELOW:
        if regions and entry.size >= REGION_FROM and isinstance(store, RegionStore):
            # Only for a caller that asked for regions (it sends them, or takes their bytes).
            return [fetch_region(store, entry, lo, hi)]  # type: ignore[list-item]
        return fetch_verified(store, entry, lo, hi, block)
    pieces = list(store.get_range(entry.chunk_hash, lo, hi, block))
    read = sum(map(len, pieces))
    if read != hi - lo:
        raise BlobIntegrityError(
            f"chunk {entry.chunk_hash} is truncated (bytes {lo}-{hi} of {entry.size} asked, "
            f"{read} read)"
        )
    return pieces


def fetch_verified(
    store: BlobStore, entry: ManifestEntry, lo: int, hi: int, block: int = DEFAULT_BLOCK
) -> list[bytes]:
    """Bytes ``[lo, hi)`` of the chunk of ``entry`` as pieces of at most ``block`` bytes, after
    the whole chunk was read and checked like ``fetch_chunk`` (length and BLAKE3). The chunk is
    read in pieces and hashed as it comes, so the bytes are served without a copy."""
    hasher = blake3.blake3()
    pieces: list[bytes] = []
    read = 0
    # One byte more than the manifest says: a chunk that grew is caught by its length.
    for piece in store.get_range(entry.chunk_hash, 0, entry.size + 1, block):
        hasher.update(piece)
        pieces.append(piece)
        read += len(piece)
    if read != entry.size or hasher.hexdigest() != entry.chunk_hash:
        raise BlobIntegrityError(
            f"chunk {entry.chunk_hash} is corrupt (read {read} bytes, expected {entry.size})"
        )
    if lo == 0 and hi == entry.size:
        return pieces
    wanted: list[bytes] = []
    position = 0
    for piece in pieces:
        first, after = position, position + len(piece)
        position = after
        if after > lo and first < hi:
            whole = lo <= first and after <= hi
            wanted.append(
                piece if whole else piece[max(lo, first) - first : min(hi, after) - first]
            )
    return wanted


@runtime_checkable
class RegionStore(Protocol):
    """A store that hands out a blob as an open file (``LocalBlobStore.region``)."""

    def region(self, key: str) -> FileRegion: ...


def fetch_region(store: RegionStore, entry: ManifestEntry, lo: int, hi: int) -> FileRegion:
    """Bytes ``[lo, hi)`` of the chunk of ``entry`` as a ``FileRegion`` of its file, after
    the whole chunk was checked like ``fetch_chunk`` (length and BLAKE3) through the region's
    open file (``FileRegion.feed``); the server's ``sendfile`` then sends it from that file."""
    region = store.region(entry.chunk_hash)
    try:
        hasher = blake3.blake3()
        size = region.feed(hasher.update) if len(region) == entry.size else len(region)
        if size != entry.size or hasher.hexdigest() != entry.chunk_hash:
            raise BlobIntegrityError(
                f"chunk {entry.chunk_hash} is corrupt (read {size} bytes, expected {entry.size})"
            )
        return region.narrow(lo, hi)
    except BaseException:
        region.close()
        raise


class ContentReader(io.RawIOBase):
    """File object over the content of manifest ``manifest_hash`` (``size`` bytes)."""

    def __init__(
        self,
        db: Database,
        store: BlobStore,
        manifest_hash: str,
        size: int,
        manifests: ManifestCache | None = None,
        inline: InlineChunks | None = None,
    ) -> None:
        super().__init__()
        self.db = db
        self.store = store
        self.manifest_hash = manifest_hash
        self.size = size
        #: Where the chunk list comes from (default: the process's cache of ``db``).
        self.manifests = manifests if manifests is not None else cache_for(db)
        #: Where small chunks kept in the database are found (``oxidav.blobs.inline``).
        self.inline = inline
        self._pos = 0
        self._chunk: tuple[ManifestEntry, bytes] | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._ahead: dict[int, Future[bytes]] = {}

    def __repr__(self) -> str:
        return f"<ContentReader {self.manifest_hash} size={self.size}>"

    # -- file object protocol ------------------------------------------------------------

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        self._check_open()
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._check_open()
        if whence == io.SEEK_SET:
            target = offset
        elif whence == io.SEEK_CUR:
            target = self._pos + offset
        elif whence == io.SEEK_END:
            target = self.size + offset
        else:
            raise ValueError(f"invalid whence {whence}")
        if target < 0:
            raise ValueError(f"negative seek position {target}")
        self._pos = target
        return target

    def readinto(self, buffer: Any) -> int:
        self._check_open()
        view = memoryview(buffer).cast("B")
        piece = self._read_piece(len(view))
        view[: len(piece)] = piece
        return len(piece)

    def read(self, size: int | None = -1) -> bytes:
        self._check_open()
        if size is None or size < 0:
            size = max(0, self.size - self._pos)
        pieces: list[bytes] = []
        while size > 0:
            piece = self._read_piece(size)
            if not piece:
                break
            pieces.append(piece)
            size -= len(piece)
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    def readall(self) -> bytes:
        return self.read(-1)

    def close(self) -> None:
        for pending in self._ahead.values():
            pending.cancel()
        self._ahead.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._chunk = None
        super().close()

    def _check_open(self) -> None:
        if self.closed:
            raise ValueError("I/O operation on closed ContentReader")

    # -- positioned reads ----------------------------------------------------------------

    def _read_piece(self, limit: int) -> bytes:
        """Up to ``limit`` bytes at the position, from a single chunk; advances the position."""
        if limit <= 0 or self._pos >= self.size:
            return b""
        entry, data = self._chunk_at(self._pos)
        offset = self._pos - entry.start
        piece = data[offset : offset + limit]
        self._pos += len(piece)
        return piece

    def _chunk_at(self, position: int) -> tuple[ManifestEntry, bytes]:
        if self._chunk is not None:
            entry = self._chunk[0]
            if entry.start <= position < entry.start + entry.size:
                return self._chunk
        entry = self._entry_at(position)
        pending = self._ahead.pop(entry.start, None)
        data = (
            pending.result() if pending is not None else fetch_chunk(self.store, entry, self.inline)
        )
        self._chunk = (entry, data)
        if self.store.concurrency > 1:
            self._read_ahead(entry)
        return self._chunk

    def _read_ahead(self, current: ManifestEntry) -> None:
        """Start fetching the chunks after ``current`` (sequential reads on a remote store)."""
        upcoming = self.manifests.following(
            self.db, self.manifest_hash, current, self.store.concurrency, self.size
        )
        wanted = {e.start for e in upcoming}
        for start in [s for s in self._ahead if s not in wanted]:
            self._ahead.pop(start).cancel()
        pool = self._executor()
        for entry in upcoming:
            if entry.start not in self._ahead:
                self._ahead[entry.start] = pool.submit(fetch_chunk, self.store, entry, self.inline)

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(
                max(1, self.store.concurrency), thread_name_prefix="oxidav-blob-get"
            )
        return self._pool

    def _entry_at(self, position: int) -> ManifestEntry:
        return self.manifests.entry_at(self.db, self.manifest_hash, position)

    def _entries(self, start: int, end: int) -> Iterator[ManifestEntry]:
        """The entries overlapping ``[start, end)``."""
        return self.manifests.entries(self.db, self.manifest_hash, start, end)

    # -- streaming a range ---------------------------------------------------------------

    def iter_range(
        self, start: int, end_exclusive: int, block: int = DEFAULT_BLOCK, regions: bool = False
    ) -> Iterator[bytes]:
        """Bytes ``[start, end_exclusive)`` (cut at the content's end) as pieces of at most
        ``block`` bytes. Independent of the read position. ``regions``: the caller also takes
        ``FileRegion`` pieces (oxidav's HTTP gateway sends them with ``sendfile``), so a chunk
        read whole from a store that has regions comes as one region of its file, checked
        through that file (``fetch_region``; not cut into blocks)."""
        self._check_open()
        if start < 0 or end_exclusive < start or block <= 0:
            raise ValueError(f"invalid range [{start}, {end_exclusive}) / block {block}")
        end = min(end_exclusive, self.size)
        if start >= end:
            return
        ahead = self.store.concurrency
        if ahead <= 1:
            ahead = 1 if end - start >= READ_AHEAD_FROM else 0
        for pieces in self._fetch_ahead(self._parts(start, end), block, ahead, regions):
            yield from pieces

    def _parts(self, start: int, end: int) -> Iterator[tuple[ManifestEntry, int, int]]:
        """(entry, lo, hi): the part ``[lo, hi)`` of each chunk that ``[start, end)`` needs."""
        for entry in self._entries(start, end):
            lo = max(start, entry.start) - entry.start
            yield entry, lo, min(end, entry.start + entry.size) - entry.start

    def _fetch_ahead(
        self,
        parts: Iterator[tuple[ManifestEntry, int, int]],
        block: int,
        ahead: int,
        regions: bool,
    ) -> Iterator[list[bytes]]:
        """Each part's pieces, in order, with up to ``ahead`` parts fetched in the background
        while the one before is consumed (0: each part fetched when it is needed)."""
        if ahead <= 0:
            for entry, lo, hi in parts:
                yield fetch_part(self.store, entry, lo, hi, block, regions, self.inline)
            return
        pool = self._executor()
        window: collections.deque[Future[list[bytes]]] = collections.deque()
        try:
            for entry, lo, hi in parts:
                window.append(
                    pool.submit(fetch_part, self.store, entry, lo, hi, block, regions, self.inline)
                )
                if len(window) > ahead:
                    yield window.popleft().result()
            while window:
                yield window.popleft().result()
        finally:
            for future in window:
                future.cancel()


__all__ = [
    "PARTIAL_BELOW",
    "READ_AHEAD_FROM",
    "REGION_FROM",
    "ContentReader",
    "fetch_chunk",
    "fetch_part",
    "fetch_verified",
]
