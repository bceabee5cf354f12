"""ContentReader: read, seek, tell, ranges; corrupt and missing chunks raise; the manifest
cache serves chunk lists without queries, within its bound; long ranges read ahead on a local
store and still serve nothing of a corrupt chunk (SQLite + PG)."""

from __future__ import annotations

import io
import os
import random
import threading
from collections.abc import Iterator

import pytest
from sqlalchemy import event

from oxidav.blobs import (
    BlobChain,
    BlobIntegrityError,
    BlobNotFoundError,
    ContentReader,
    LocalBlobStore,
    catalog,
)
from oxidav.blobs.chunking import ChunkParams
from oxidav.blobs.manifest_cache import ManifestCache, cache_for
from oxidav.blobs.manifests import ManifestEntry
from oxidav.blobs.reader import READ_AHEAD_FROM, REGION_FROM
from oxidav.blobs.regions import FileRegion
from tests.support.blobs import RecordingStore, pieces, random_bytes

DATA = random_bytes(5_000_000, seed=11)


@pytest.fixture
def stored(chain: BlobChain) -> str:
    return chain.ingest(pieces(DATA)).manifest_hash


def test_read_in_pieces(chain: BlobChain, stored: str) -> None:
    with chain.open(stored) as reader:
        assert reader.size == len(DATA)
        assert reader.readable() and reader.seekable()
        out = bytearray()
        while piece := reader.read(77_777):
            out += piece
        assert out == DATA
        assert reader.read(10) == b""
        assert reader.tell() == len(DATA)


def test_seek_and_tell(chain: BlobChain, stored: str) -> None:
    with chain.open(stored) as reader:
        assert reader.seek(1_234_567) == 1_234_567
        assert reader.read(1000) == DATA[1_234_567:1_235_567]
        assert reader.seek(-10, io.SEEK_END) == len(DATA) - 10
        assert reader.read() == DATA[-10:]
        reader.seek(100)
        assert reader.seek(50, io.SEEK_CUR) == 150
        assert reader.read(5) == DATA[150:155]
        reader.seek(len(DATA) + 100)
        assert reader.read(5) == b""
        with pytest.raises(ValueError):
            reader.seek(-1)


def test_readinto_and_buffered_wrapper(chain: BlobChain, stored: str) -> None:
    with chain.open(stored) as reader:
        buf = bytearray(500)
        reader.seek(999)
        n = reader.readinto(buf)
        assert buf[:n] == DATA[999 : 999 + n]
        reader.seek(0)
        buffered = io.BufferedReader(reader, 64 * 1024)
        assert buffered.read() == DATA


def test_iter_range(chain: BlobChain, stored: str) -> None:
    rng = random.Random(3)
    with chain.open(stored) as reader:
        assert b"".join(reader.iter_range(0, len(DATA))) == DATA
        for _ in range(30):
            a = rng.randrange(len(DATA))
            b = rng.randrange(a, len(DATA) + 1)
            assert b"".join(reader.iter_range(a, b, block=10_000)) == DATA[a:b]
        assert all(len(p) <= 4096 for p in reader.iter_range(0, 100_000, 4096))
        assert b"".join(reader.iter_range(len(DATA) - 5, len(DATA) + 100)) == DATA[-5:]
        assert list(reader.iter_range(10, 10)) == []
        assert list(reader.iter_range(len(DATA) + 1, len(DATA) + 9)) == []
        with pytest.raises(ValueError):
            list(reader.iter_range(5, 4))


def test_many_chunks_span_cache_pages(chain: BlobChain) -> None:
    # Small chunks and a small page span: a read crosses many pages of the manifest cache.
    small = BlobChain(chain.db, chain.store, ChunkParams(32 << 10, 64 << 10, 128 << 10))
    data = b"".join(random_bytes(70_000, seed=i) + bytes(70_000) for i in range(40))
    manifest = small.ingest(pieces(data, 1 << 20)).manifest_hash
    entries = list(catalog.iter_entries(chain.db, manifest))
    cache = ManifestCache(span=256 << 10)
    with ContentReader(chain.db, chain.store, manifest, len(data), cache) as reader:
        assert b"".join(reader.iter_range(0, len(data), 1 << 20)) == data
        pages = cache.loads
        assert 15 <= pages <= -(-len(data) // (256 << 10))  # each page loaded once
        reader.seek(len(data) - 1000)
        assert reader.read() == data[-1000:]
        starts = (0, 255 << 10, 256 << 10, (512 << 10) - 7, len(data) - 70_001)
        for start in starts:
            got = b"".join(reader.iter_range(start, start + 70_000, 10_000))
            assert got == data[start : start + 70_000]
        assert pages <= cache.loads <= pages + 1  # + the last page, whose chunk starts before
        loads = cache.loads
        assert b"".join(reader.iter_range(0, len(data), 1 << 20)) == data
        for start in starts:
            assert b"".join(reader.iter_range(start, start + 9)) == data[start : start + 9]
        assert cache.loads == loads
    assert len(entries) > 40
    assert [cache.entry_at(chain.db, manifest, e.start) for e in entries] == entries


def _statements(chain: BlobChain) -> list[str]:
    seen: list[str] = []
    event.listen(chain.db.engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
    return seen


def test_a_cached_manifest_is_read_without_a_query(chain: BlobChain, stored: str) -> None:
    size = len(DATA)
    with chain.open(stored, size) as reader:
        assert b"".join(reader.iter_range(0, size)) == DATA
    seen = _statements(chain)
    rng = random.Random(5)
    for _ in range(20):
        start = rng.randrange(size - 65_536)
        with chain.open(stored, size) as reader:
            assert b"".join(reader.iter_range(start, start + 65_536)) == DATA[start:][:65_536]
            reader.seek(start)
            assert reader.read(1000) == DATA[start : start + 1000]
    assert seen == []
    assert cache_for(chain.db) is cache_for(chain.db)


def test_the_cache_stays_within_its_bound_and_reloads_what_it_evicted(chain: BlobChain) -> None:
    contents = [random_bytes(3_000_000, seed=100 + i) for i in range(6)]
    manifests = [chain.ingest(pieces(c)).manifest_hash for c in contents]
    one_page = len(list(catalog.iter_entries(chain.db, manifests[0])))
    cache = ManifestCache(max_bytes=2 * (400 + 48 * (one_page + 2)))

    def read(i: int, start: int, end: int) -> bytes:
        with ContentReader(chain.db, chain.store, manifests[i], len(contents[i]), cache) as r:
            return b"".join(r.iter_range(start, end))

    for i, content in enumerate(contents):
        assert read(i, 1000, 70_000) == content[1000:70_000]
        assert cache.size_bytes <= cache.max_bytes
        assert len(cache) <= 2
    loads = cache.loads
    # manifests[0] was evicted by the later ones: read again, it is reloaded, still correct.
    assert read(0, 2_000_000, 2_065_536) == contents[0][2_000_000:2_065_536]
    assert cache.loads == loads + 1
    assert read(0, 5, 10) == contents[0][5:10]
    assert cache.loads == loads + 1
    # A bound below one page caches nothing, and reads stay correct.
    tiny = ManifestCache(max_bytes=10)
    with ContentReader(chain.db, chain.store, manifests[1], len(contents[1]), tiny) as reader:
        assert reader.read() == contents[1]
    assert len(tiny) == 0 and tiny.size_bytes == 0


def test_corrupt_chunk_raises(chain: BlobChain, stored: str, local_store) -> None:
    key = next(iter(local_store.iter_keys()))
    path = local_store.path(key)
    raw = bytearray(path.read_bytes())
    raw[100] ^= 0xFF
    path.write_bytes(bytes(raw))
    with chain.open(stored) as reader, pytest.raises(BlobIntegrityError):
        reader.read()


def test_missing_chunk_raises(chain: BlobChain, stored: str, local_store) -> None:
    for key in list(local_store.iter_keys()):
        local_store.delete(key)
    with chain.open(stored) as reader, pytest.raises(BlobNotFoundError):
        reader.read(10)


def test_closed_reader(chain: BlobChain, stored: str) -> None:
    reader = chain.open(stored)
    reader.close()
    with pytest.raises(ValueError):
        reader.read(1)


@pytest.fixture
def recorded(chain: BlobChain) -> tuple[BlobChain, RecordingStore, str]:
    store = RecordingStore(chain.store)
    rchain = BlobChain(chain.db, store)
    return rchain, store, rchain.ingest(pieces(DATA, 1 << 20)).manifest_hash


def _big_entry(chain: BlobChain, manifest: str) -> ManifestEntry:
    return max(catalog.iter_entries(chain.db, manifest), key=lambda e: e.size)


def test_small_range_reads_only_its_bytes(
    recorded: tuple[BlobChain, RecordingStore, str],
) -> None:
    """A 64 KiB range inside one chunk reads those 64 KiB from the store, not the chunk."""
    rchain, store, manifest = recorded
    entry = _big_entry(rchain, manifest)
    assert entry.size >= 4 * 65_536
    start = entry.start + entry.size // 3
    store.reset()
    with rchain.open(manifest) as reader:
        got = b"".join(reader.iter_range(start, start + 65_536, 16_384))
    assert got == DATA[start : start + 65_536]
    assert store.gets == []
    assert store.ranges == [(entry.chunk_hash, start - entry.start, start - entry.start + 65_536)]
    # A range across a chunk boundary: a part of each chunk, still only the bytes asked.
    store.reset()
    end = entry.start + entry.size
    with rchain.open(manifest) as reader:
        got = b"".join(reader.iter_range(end - 1000, end + 1000))
    assert got == DATA[end - 1000 : end + 1000]
    assert store.gets == [] and [r[2] - r[1] for r in store.ranges] == [1000, 1000]


def test_half_a_chunk_or_more_is_read_whole_and_verified(
    recorded: tuple[BlobChain, RecordingStore, str], local_store: LocalBlobStore
) -> None:
    rchain, store, manifest = recorded
    entry = _big_entry(rchain, manifest)
    path = local_store.path(entry.chunk_hash)
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0xFF  # outside the range asked below: the whole-chunk hash still catches it
    path.write_bytes(bytes(raw))
    store.reset()
    with rchain.open(manifest) as reader, pytest.raises(BlobIntegrityError):
        list(reader.iter_range(entry.start, entry.start + entry.size // 2))
    # The whole chunk was read (one byte more is asked, so a grown chunk is caught too).
    assert store.gets == [] and store.ranges == [(entry.chunk_hash, 0, entry.size + 1)]


def test_a_chunk_read_whole_is_served_in_pieces_and_a_grown_chunk_fails(
    recorded: tuple[BlobChain, RecordingStore, str], local_store: LocalBlobStore
) -> None:
    rchain, _store, manifest = recorded
    entry = _big_entry(rchain, manifest)
    lo, hi = entry.start + 1000, entry.start + entry.size - 1000
    with rchain.open(manifest) as reader:
        pieces = list(reader.iter_range(lo, hi, 100_000))
    assert b"".join(pieces) == DATA[lo:hi] and max(map(len, pieces)) <= 100_000
    path = local_store.path(entry.chunk_hash)
    path.write_bytes(path.read_bytes() + b"x")
    with rchain.open(manifest) as reader, pytest.raises(BlobIntegrityError, match="corrupt"):
        list(reader.iter_range(lo, hi))


def test_truncated_chunk_fails_a_small_range(
    recorded: tuple[BlobChain, RecordingStore, str], local_store: LocalBlobStore
) -> None:
    rchain, _store, manifest = recorded
    entry = _big_entry(rchain, manifest)
    path = local_store.path(entry.chunk_hash)
    path.write_bytes(path.read_bytes()[: entry.size // 3 + 10])
    start = entry.start + entry.size // 3
    with rchain.open(manifest) as reader, pytest.raises(BlobIntegrityError, match="truncated"):
        list(reader.iter_range(start, start + 65_536))


def test_open_with_a_known_size_reads_the_same_bytes(chain: BlobChain, stored: str) -> None:
    size = chain.stat(stored).size
    with chain.open(stored) as looked_up, chain.open(stored, size) as given:
        assert given.size == looked_up.size == size
        given.seek(size // 3)
        looked_up.seek(size // 3)
        assert given.read(100_000) == looked_up.read(100_000)


def test_open_with_a_size_of_a_missing_manifest_fails_on_read(chain: BlobChain) -> None:
    with chain.open("0" * 64, 10) as reader, pytest.raises(BlobIntegrityError):
        reader.read(1)


def _read_ahead_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("oxidav-blob-get")]


def test_a_long_range_on_a_local_store_reads_the_next_chunk_ahead(
    recorded: tuple[BlobChain, RecordingStore, str],
) -> None:
    """From ``READ_AHEAD_FROM`` on, the next chunk is read on another thread while the one
    before is consumed; shorter ranges stay on the caller's thread."""
    rchain, store, manifest = recorded
    assert store.concurrency == 1 and len(DATA) >= READ_AHEAD_FROM
    readers: set[str] = set()
    inner_get_range = store.get_range

    def get_range(key: str, start: int, end: int, block: int = 1 << 18) -> Iterator[bytes]:
        readers.add(threading.current_thread().name)
        return inner_get_range(key, start, end, block)

    store.get_range = get_range  # type: ignore[method-assign]
    with rchain.open(manifest) as reader:
        assert b"".join(reader.iter_range(0, READ_AHEAD_FROM - 1)) == DATA[: READ_AHEAD_FROM - 1]
        assert readers == {threading.current_thread().name}
        readers.clear()
        assert b"".join(reader.iter_range(7, len(DATA))) == DATA[7:]
        assert any(name.startswith("oxidav-blob-get") for name in readers)
    assert _read_ahead_threads() == []  # closing the reader stopped its thread


def test_read_ahead_serves_nothing_of_a_corrupt_chunk(
    recorded: tuple[BlobChain, RecordingStore, str], local_store: LocalBlobStore
) -> None:
    """A corrupt chunk in the middle of a long range raises before any of its bytes are
    served; every byte served before it is right."""
    rchain, _store, manifest = recorded
    entries = list(catalog.iter_entries(rchain.db, manifest))
    bad = entries[len(entries) // 2]
    path = local_store.path(bad.chunk_hash)
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))
    served = bytearray()
    with rchain.open(manifest) as reader, pytest.raises(BlobIntegrityError):
        for piece in reader.iter_range(0, len(DATA)):
            served += piece
    assert served == DATA[: bad.start]


def test_an_abandoned_long_range_leaves_no_thread(
    recorded: tuple[BlobChain, RecordingStore, str],
) -> None:
    """A client that goes away mid-GET: the range is closed half-read, then the reader."""
    rchain, _store, manifest = recorded
    with rchain.open(manifest) as reader:
        stream = reader.iter_range(0, len(DATA), 65_536)
        assert next(stream) == DATA[:65_536]
        stream.close()
        assert reader.read(10) == DATA[:10]
    assert _read_ahead_threads() == []


def test_regions_serve_whole_chunks_as_regions_of_their_files(
    chain: BlobChain, stored: str
) -> None:
    """``regions=True`` on a store that has them: each chunk of at least ``REGION_FROM`` bytes
    read whole comes as one ``FileRegion`` of its file (not cut into blocks, its descriptor
    closed with it); a smaller chunk and the parts of a small range still come as ``bytes``;
    every byte is right."""
    entries = list(catalog.iter_entries(chain.db, stored))
    assert len(entries) >= 3
    with chain.open(stored) as reader:
        pieces = list(reader.iter_range(0, len(DATA), 1 << 20, regions=True))
        regions = [p for p in pieces if isinstance(p, FileRegion)]
        assert len(regions) == sum(1 for e in entries if e.size >= REGION_FROM) >= 2
        assert [len(p) for p in regions] == [e.size for e in entries if e.size >= REGION_FROM]
        assert b"".join(bytes(p) for p in pieces) == DATA
        fds = [p.fd for p in regions]
        for piece in regions:
            piece.close()
        for fd in fds:
            with pytest.raises(OSError):
                os.fstat(fd)
        lo, hi = entries[1].start + 10, entries[2].start + entries[2].size - 10
        parts = reader.iter_range(lo, hi, regions=True)
        assert b"".join(bytes(p) for p in parts) == DATA[lo:hi]
        start = entries[1].start + 5
        small = list(reader.iter_range(start, start + 70_000, regions=True))
        assert all(type(p) is bytes for p in small)
        assert b"".join(small) == DATA[start : start + 70_000]


def test_regions_read_a_small_chunk(chain: BlobChain) -> None:
    """A chunk below ``REGION_FROM`` (a small file's one chunk) is read even when regions are
    taken: mapping a file costs more than copying a few KiB."""
    content = random_bytes(4096, seed=12)
    small = chain.ingest([content]).manifest_hash
    with chain.open(small) as reader:
        pieces = list(reader.iter_range(0, len(content), regions=True))
    assert pieces == [content]


@pytest.mark.parametrize("change", ["flip", "grow", "shrink"])
def test_regions_serve_nothing_of_a_corrupt_chunk(
    chain: BlobChain, stored: str, local_store: LocalBlobStore, change: str
) -> None:
    """A chunk handed out as a region is checked like a read one: a changed, grown or
    shortened chunk raises before any of its bytes are served; every byte served before it
    is right."""
    entries = list(catalog.iter_entries(chain.db, stored))
    bad = entries[len(entries) // 2]
    path = local_store.path(bad.chunk_hash)
    raw = bytearray(path.read_bytes())
    if change == "flip":
        raw[len(raw) // 2] ^= 0xFF
    elif change == "grow":
        raw += b"x"
    else:
        del raw[-1]
    path.write_bytes(bytes(raw))
    served = bytearray()
    with chain.open(stored) as reader, pytest.raises(BlobIntegrityError, match="corrupt"):
        for piece in reader.iter_range(0, len(DATA), regions=True):
            served += bytes(piece)
    assert served == DATA[: bad.start]
