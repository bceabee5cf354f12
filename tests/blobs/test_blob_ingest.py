"""Ingest: streaming chunking, dedup, durability before visibility, crash safety (SQLite + PG)."""

from __future__ import annotations

import hashlib
import io

import blake3
import pytest

from oxidav.blobs import BlobChain, IncompleteContentError, LocalBlobStore
from oxidav.blobs.chunking import CDC_AVG, CDC_MAX, CDC_MIN, chunk_bytes
from oxidav.db import Database
from tests.support.blobs import (
    RecordingStore,
    assert_only_orphans_added,
    chunk_refcounts,
    make_source,
    manifest_count,
    pieces,
    random_bytes,
)


@pytest.fixture
def store(local_store: LocalBlobStore) -> RecordingStore:
    return RecordingStore(local_store)


@pytest.fixture
def rchain(database: Database, store: RecordingStore) -> BlobChain:
    return BlobChain(database, store)


def read_all(chain: BlobChain, manifest: str) -> bytes:
    with chain.open(manifest) as reader:
        return reader.read()


def test_ingest_roundtrip_from_iterable_and_file(rchain: BlobChain) -> None:
    data = random_bytes(3_000_000)
    stored = rchain.ingest(pieces(data), md5=True)
    assert stored.size == len(data)
    assert stored.content_hash == blake3.blake3(data).hexdigest()
    assert stored.md5 == hashlib.md5(data).hexdigest()
    assert read_all(rchain, stored.manifest_hash) == data
    again = rchain.ingest(io.BytesIO(data), expected_length=len(data))
    assert again.manifest_hash == stored.manifest_hash
    assert again.md5 is None


def test_chunk_sizes_follow_cdc_bounds() -> None:
    # ~25 chunks, as when this test was written for 64K/256K/1M (8 MB, mean 150-600 kB); the
    # content and the band scale with the mean chunk (about min + avg).
    scale = (CDC_MIN + CDC_AVG) / (320 * 1024)
    chunks = chunk_bytes(random_bytes(int(8_000_000 * scale)))
    sizes = [len(c.data) for c in chunks]
    assert all(CDC_MIN <= s <= CDC_MAX for s in sizes[:-1])
    assert 150_000 * scale < sum(sizes) / len(sizes) < 600_000 * scale


def test_empty_content(rchain: BlobChain, store: RecordingStore) -> None:
    stored = rchain.ingest([], expected_length=0)
    assert stored.size == 0
    assert stored.content_hash == blake3.blake3(b"").hexdigest()
    assert store.puts == []
    assert read_all(rchain, stored.manifest_hash) == b""
    assert rchain.stat(stored.manifest_hash).size == 0


def test_small_content_single_chunk(rchain: BlobChain, store: RecordingStore) -> None:
    stored = rchain.ingest([b"hello ", b"world"], expected_length=11)
    assert read_all(rchain, stored.manifest_hash) == b"hello world"
    assert store.puts == [blake3.blake3(b"hello world").hexdigest()]
    assert store.synced == store.puts  # durability before visibility


def test_every_written_chunk_is_synced(rchain: BlobChain, store: RecordingStore) -> None:
    data = random_bytes(20_000_000, seed=3)
    rchain.ingest(pieces(data, 1 << 20))
    assert len(store.puts) > 10
    assert sorted(store.synced) == sorted(store.puts)


def test_same_content_twice_writes_chunks_once(
    rchain: BlobChain, store: RecordingStore, database: Database
) -> None:
    data = random_bytes(6_000_000, seed=4)
    first = rchain.ingest(pieces(data))
    written = list(store.puts)
    refs = chunk_refcounts(database)
    assert len(written) == len(set(written)) == len(refs)
    store.reset()
    second = rchain.ingest(pieces(data))
    assert second == first
    assert store.puts == []
    assert chunk_refcounts(database) == refs  # a second ingest of a manifest adds no refs
    assert manifest_count(database) == 1


def test_repeated_chunk_within_one_content_is_written_once(
    rchain: BlobChain, store: RecordingStore, database: Database
) -> None:
    data = bytes(40 * CDC_MAX)  # zeros: the same (largest) chunk over and over
    stored = rchain.ingest(pieces(data, 1 << 20))
    refs = chunk_refcounts(database)
    assert len(store.puts) == len(refs) <= 2  # the repeated chunk (and a shorter tail)
    assert sum(refs.values()) >= 40  # each use counts
    with rchain.open(stored.manifest_hash) as reader:
        check = blake3.blake3()
        for piece in reader.iter_range(0, len(data), 1 << 20):
            check.update(piece)
    assert stored.size == len(data) and check.digest() == blake3.blake3(data).digest()


def _insert_one_byte(size: int, rchain: BlobChain, store: RecordingStore) -> None:
    data = random_bytes(size, seed=5)
    rchain.ingest(pieces(data, 1 << 20))
    total_chunks = len(store.puts)
    store.reset()
    edited = data[:1000] + b"!" + data[1000:]
    stored = rchain.ingest(pieces(edited, 1 << 20))
    # CDC: only the chunk(s) around the edit change; fixed blocks would rewrite everything.
    assert 1 <= len(store.puts) <= 2
    assert store.put_bytes <= 2 * CDC_MAX
    assert total_chunks > 20
    with rchain.open(stored.manifest_hash) as reader:
        assert blake3.blake3(reader.read()).digest() == blake3.blake3(edited).digest()


def test_one_byte_insert_rewrites_only_nearby_chunks(
    rchain: BlobChain, store: RecordingStore
) -> None:
    _insert_one_byte(40 << 20, rchain, store)  # > 20 chunks of the default sizes


@pytest.mark.slow
def test_one_byte_insert_rewrites_only_nearby_chunks_64mib(
    rchain: BlobChain, store: RecordingStore
) -> None:
    _insert_one_byte(64 << 20, rchain, store)


@pytest.mark.slow
def test_same_64mib_twice_writes_chunks_once(rchain: BlobChain, store: RecordingStore) -> None:
    data = random_bytes(64 << 20, seed=6)
    first = rchain.ingest(pieces(data, 1 << 20))
    assert store.put_bytes == len(data)
    store.reset()
    assert rchain.ingest(pieces(data, 1 << 20)) == first
    assert store.puts == []


@pytest.mark.parametrize("announced", [999_999, 1_000_001])
def test_incomplete_content_leaves_nothing_visible(
    rchain: BlobChain, database: Database, announced: int
) -> None:
    data = random_bytes(1_000_000)
    with pytest.raises(IncompleteContentError):
        rchain.ingest(io.BytesIO(data), expected_length=announced)
    assert manifest_count(database) == 0
    assert all(count == 0 for count in chunk_refcounts(database).values())


def test_long_body_detected_without_reading_everything(rchain: BlobChain) -> None:
    source = io.BytesIO(bytes(10 << 20))
    with pytest.raises(IncompleteContentError):
        rchain.ingest(source, expected_length=100)
    assert source.tell() <= 100 + (4 << 20)


def test_failure_mid_ingest_leaves_no_manifest_and_no_refcount_change(
    rchain: BlobChain, store: RecordingStore, database: Database
) -> None:
    kept = rchain.ingest(pieces(random_bytes(3_000_000, seed=7)))
    before = chunk_refcounts(database)
    data = random_bytes(60_000_000, seed=8)
    # Well past the first batch (16 MiB) plus the chunker's read-ahead (2 x max chunk).
    source = make_source(list(pieces(data, 1 << 20)), fail_after=40)
    with pytest.raises(OSError, match="client went away"):
        rchain.ingest(source())
    assert_only_orphans_added(database, before, store, manifests=1)
    assert read_all(rchain, kept.manifest_hash) == random_bytes(3_000_000, seed=7)


def test_store_failure_mid_ingest_leaves_no_manifest(
    rchain: BlobChain, store: RecordingStore, database: Database
) -> None:
    store.fail_put_after = 5
    with pytest.raises(OSError, match="disk on fire"):
        rchain.ingest(pieces(random_bytes(30_000_000, seed=9), 1 << 20))
    assert manifest_count(database) == 0
    assert all(v == 0 for v in chunk_refcounts(database).values())


def test_ingest_after_failure_rewrites_unreferenced_chunks(
    rchain: BlobChain, store: RecordingStore, database: Database
) -> None:
    data = random_bytes(5_000_000, seed=10)
    source = make_source(list(pieces(data, 1 << 20)), fail_after=4)
    with pytest.raises(OSError):
        rchain.ingest(source())
    store.reset()
    stored = rchain.ingest(pieces(data, 1 << 20))
    # Unreferenced chunks (refcount 0) are never trusted: they are written again.
    assert store.put_bytes == len(data)
    assert read_all(rchain, stored.manifest_hash) == data


@pytest.mark.parametrize("size", [1000, 30_000_000])
def test_failed_sync_sweep_leaves_no_manifest(
    rchain: BlobChain, store: RecordingStore, database: Database, size: int
) -> None:
    store.fail_sync = True
    with pytest.raises(OSError, match="fsync failed"):
        rchain.ingest(pieces(random_bytes(size, seed=12), 1 << 20))
    assert manifest_count(database) == 0
