"""``ManifestCache``: manifest chunk lists kept in process, so a read of a known content asks the
database nothing.

A manifest is named by the hash of its chunk list (``oxidav.blobs.manifests``): the list under a
name never changes, so a cached copy never goes stale and needs no invalidation. It is held in
*pages* by byte span: page ``k`` of a manifest holds the entries that overlap the bytes
``[k * span, (k + 1) * span)`` (the one straddling the page start included), loaded with one
indexed query the first time a read needs it. A page is stored packed (start, size and the
32-byte chunk digest per entry, ~48 bytes an entry), and a byte position is found by bisection.

The cache is bounded by bytes (``max_bytes``, an estimate of the packed pages plus a fixed cost
per page) and evicts the least recently used page; each ``Database`` gets its own cache
(``cache_for``), so tests with many databases in one process never share entries.
"""

from __future__ import annotations

import bisect
import itertools
import threading
import weakref
from array import array
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass

from sqlalchemy import BigInteger, Table, bindparam, func, literal, select, union_all

from oxidav.blobs.manifests import ManifestEntry
from oxidav.blobs.store import BlobIntegrityError
from oxidav.db import Database
from oxidav.db.models.blobs import BlobChunk, BlobManifestChunk
from oxidav.db.prepared import PreparedRead

#: Bytes of content one page of entries covers (~200 entries at the default chunk sizes; at
#: most span / smallest chunk).
PAGE_SPAN = 256 << 20
#: Default bound of one cache: ~85k entries, ~100 GiB of content at the default chunk sizes.
MAX_BYTES = 4 << 20
#: Estimated bytes of one cached entry and of one page's objects.
ENTRY_COST = 48
PAGE_COST = 400

_entries: Table = BlobManifestChunk.__table__  # type: ignore[assignment]
_chunks: Table = BlobChunk.__table__  # type: ignore[assignment]
_first_start = (
    select(func.max(_entries.c.start))
    .where(
        _entries.c.manifest_hash == bindparam("manifest_hash"),
        _entries.c.start <= bindparam("lo"),
    )
    .scalar_subquery()
)
#: The entries of one page: from the entry holding byte ``lo`` to the last starting before
#: ``hi``; for a content named by its chunk (no manifest row, ``oxidav.blobs.inline``), page 0
#: is that chunk, found by the same statement.
_PAGE = union_all(
    select(_entries.c.start, _entries.c.size, _entries.c.chunk_hash).where(
        _entries.c.manifest_hash == bindparam("manifest_hash"),
        _entries.c.start >= _first_start,
        _entries.c.start < bindparam("hi"),
    ),
    select(literal(0, BigInteger()), _chunks.c.size, _chunks.c.hash).where(
        _chunks.c.hash == bindparam("manifest_hash"),
        _chunks.c.content_refs.is_not(None),
        bindparam("lo") == 0,
    ),
).order_by("start")
#: ``_PAGE`` as one statement outside a session (a small file's first GET loads its page).
_PAGE_READ = PreparedRead(_PAGE)


@dataclass(frozen=True, slots=True)
class EntryPage:
    """Consecutive entries of one manifest, packed: ``starts[i]``, ``sizes[i]``, and the
    digest of chunk ``i`` at ``digests[32 * i : 32 * i + 32]``."""

    starts: array[int]
    sizes: array[int]
    digests: bytes

    def __len__(self) -> int:
        return len(self.starts)

    @property
    def cost(self) -> int:
        return PAGE_COST + ENTRY_COST * len(self.starts)

    @property
    def end(self) -> int:
        """The byte after the last entry."""
        return self.starts[-1] + self.sizes[-1]

    def entry(self, index: int) -> ManifestEntry:
        digest = self.digests[32 * index : 32 * index + 32]
        return ManifestEntry(self.starts[index], self.sizes[index], digest.hex())

    def index_at(self, position: int) -> int | None:
        """The index of the entry holding byte ``position``, or None."""
        index = bisect.bisect_right(self.starts, position) - 1
        if index < 0 or position >= self.starts[index] + self.sizes[index]:
            return None
        return index


def _pack(rows: list[tuple[int, int, str]]) -> EntryPage:
    return EntryPage(
        array("q", [r[0] for r in rows]),
        array("q", [r[1] for r in rows]),
        b"".join(bytes.fromhex(r[2]) for r in rows),
    )


class ManifestCache:
    """Pages of manifest entries by (manifest hash, page number); LRU, bounded by bytes.
    Thread-safe: two threads missing the same page both load it (the same rows)."""

    def __init__(self, max_bytes: int = MAX_BYTES, span: int = PAGE_SPAN) -> None:
        if span <= 0 or max_bytes < 0:
            raise ValueError("the page span must be positive and the bound not negative")
        self.max_bytes = max_bytes
        self.span = span
        self._pages: OrderedDict[tuple[str, int], EntryPage] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        #: Page loads (database queries) since creation: for tests and benchmarks.
        self.loads = 0

    def __len__(self) -> int:
        return len(self._pages)

    @property
    def size_bytes(self) -> int:
        """The estimated bytes the cached pages hold (never above ``max_bytes``)."""
        return self._bytes

    def clear(self) -> None:
        with self._lock:
            self._pages.clear()
            self._bytes = 0

    def page(self, db: Database, manifest_hash: str, page_no: int) -> EntryPage:
        """Page ``page_no`` of a manifest, loaded if needed. Raises ``BlobIntegrityError``
        when the manifest has no entry at the page's first byte (missing manifest)."""
        key = (manifest_hash, page_no)
        with self._lock:
            found = self._pages.get(key)
            if found is not None:
                self._pages.move_to_end(key)
                return found
        lo = page_no * self.span
        rows = _PAGE_READ.rows(db, {"manifest_hash": manifest_hash, "lo": lo, "hi": lo + self.span})
        page = _pack([(int(r[0]), int(r[1]), str(r[2])) for r in rows])
        if not page.starts or page.index_at(lo) is None:
            raise BlobIntegrityError(f"manifest {manifest_hash} has no chunk for byte {lo}")
        self._store(key, page)
        return page

    def _store(self, key: tuple[str, int], page: EntryPage) -> None:
        with self._lock:
            self.loads += 1
            if page.cost > self.max_bytes:
                return
            old = self._pages.pop(key, None)
            if old is not None:
                self._bytes -= old.cost
            self._pages[key] = page
            self._bytes += page.cost
            while self._bytes > self.max_bytes:
                _key, evicted = self._pages.popitem(last=False)
                self._bytes -= evicted.cost

    def entry_at(self, db: Database, manifest_hash: str, position: int) -> ManifestEntry:
        """The entry holding byte ``position``; ``BlobIntegrityError`` if there is none."""
        page = self.page(db, manifest_hash, position // self.span)
        index = page.index_at(position)
        if index is None:
            raise BlobIntegrityError(f"manifest {manifest_hash} has no chunk for byte {position}")
        return page.entry(index)

    def entries(
        self, db: Database, manifest_hash: str, start: int, end: int
    ) -> Iterator[ManifestEntry]:
        """The entries overlapping bytes ``[start, end)``, in order; a gap in the chunk list
        raises ``BlobIntegrityError``."""
        position = start
        while position < end:
            page = self.page(db, manifest_hash, position // self.span)
            index = page.index_at(position)
            if index is None:
                raise BlobIntegrityError(
                    f"manifest {manifest_hash} has no chunk for byte {position}"
                )
            for i in range(index, len(page)):
                if position >= end:
                    return
                if i != index and page.starts[i] != position:
                    raise BlobIntegrityError(
                        f"manifest {manifest_hash} has a gap at byte {position}"
                    )
                yield page.entry(i)
                position = page.starts[i] + page.sizes[i]

    def following(
        self, db: Database, manifest_hash: str, entry: ManifestEntry, count: int, size: int
    ) -> list[ManifestEntry]:
        """Up to ``count`` entries after ``entry`` within a content of ``size`` bytes."""
        upcoming = self.entries(db, manifest_hash, entry.start + entry.size, size)
        return list(itertools.islice(upcoming, count))


_caches: weakref.WeakKeyDictionary[Database, ManifestCache] = weakref.WeakKeyDictionary()
_caches_lock = threading.Lock()


def cache_for(db: Database) -> ManifestCache:
    """The process's manifest cache of ``db`` (made on first use)."""
    with _caches_lock:
        cache = _caches.get(db)
        if cache is None:
            cache = _caches[db] = ManifestCache()
        return cache


__all__ = ["MAX_BYTES", "PAGE_SPAN", "EntryPage", "ManifestCache", "cache_for"]
