"""ContentReader: read, seek, tell, ranges; corrupt and missing chunks raise (SQLite + PG)."""

from __future__ import annotations

import io
import random

import pytest

from oxidav.blobs import BlobChain, BlobIntegrityError, BlobNotFoundError, LocalBlobStore, catalog
from oxidav.blobs.chunking import ChunkParams
from oxidav.blobs.manifests import ManifestEntry
from oxidav.blobs.reader import ENTRY_PAGE

from .support import RecordingStore, pieces, random_bytes

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


def test_many_chunks_span_entry_pages(chain: BlobChain) -> None:
    # More chunks than one page of entries (small chunks: the default sizes would need GiBs).
    small = BlobChain(chain.db, chain.store, ChunkParams(32 << 10, 64 << 10, 128 << 10))
    data = b"".join(random_bytes(70_000, seed=i) + bytes(70_000) for i in range(ENTRY_PAGE))
    manifest = small.ingest(pieces(data, 1 << 20)).manifest_hash
    assert len(list(catalog.iter_entries(chain.db, manifest))) > ENTRY_PAGE
    with chain.open(manifest) as reader:
        assert b"".join(reader.iter_range(0, len(data), 1 << 20)) == data
        reader.seek(len(data) - 1000)
        assert reader.read() == data[-1000:]


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
    assert store.gets == [entry.chunk_hash] and store.ranges == []


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
