"""gc with a grace period, crash leftovers collected later, fsck findings (SQLite + PG)."""

from __future__ import annotations

from datetime import timedelta

import blake3
import pytest

from oxidav.blobs import BlobChain, LocalBlobStore
from oxidav.blobs.fsck import check
from oxidav.blobs.gc import collect_garbage
from oxidav.db import Database, utcnow
from tests.support.blobs import chunk_refcounts, make_source, manifest_count, pieces, random_bytes


def stored_keys(store: LocalBlobStore) -> set[str]:
    return set(store.iter_keys())


def test_referenced_content_survives_gc(chain: BlobChain, database: Database, local_store) -> None:
    data = random_bytes(3_000_000)
    stored = chain.ingest(pieces(data))
    with database.write() as session:
        chain.incref(session, stored.manifest_hash)
    report = collect_garbage(database, local_store, 0)
    assert report.manifests_removed == report.chunks_removed == 0
    with chain.open(stored.manifest_hash) as reader:
        assert reader.read() == data


def test_unreferenced_content_waits_for_grace_period(
    chain: BlobChain, database: Database, local_store
) -> None:
    stored = chain.ingest(pieces(random_bytes(2_000_000)))
    with database.write() as session:
        chain.incref(session, stored.manifest_hash)
    with database.write() as session:
        chain.decref(session, stored.manifest_hash)
    keys = stored_keys(local_store)
    assert collect_garbage(database, local_store, 3600).manifests_removed == 0
    assert manifest_count(database) == 1
    # An hour later the manifest goes; its chunks start their own grace period.
    later = utcnow() + timedelta(seconds=3601)
    report = collect_garbage(database, local_store, 3600, now=later)
    assert report.manifests_removed == 1 and report.chunks_removed == 0
    assert all(v == 0 for v in chunk_refcounts(database).values())
    assert stored_keys(local_store) == keys
    report = collect_garbage(database, local_store, 3600, now=later + timedelta(seconds=3601))
    assert report.chunks_removed == len(keys)
    assert report.bytes_freed == 2_000_000
    assert stored_keys(local_store) == set()
    assert chunk_refcounts(database) == {}


def test_shared_chunks_are_kept(chain: BlobChain, database: Database, local_store) -> None:
    a = random_bytes(3_000_000, seed=1)
    keep = chain.ingest(pieces(a + random_bytes(100, seed=2)))
    drop = chain.ingest(pieces(a))
    with database.write() as session:
        chain.incref(session, keep.manifest_hash)
    report = collect_garbage(database, local_store, 0)
    assert report.manifests_removed == 1
    assert report.chunks_removed == 1  # only drop's tail chunk was its own
    with chain.open(keep.manifest_hash) as reader:
        assert reader.read() == a + random_bytes(100, seed=2)
    assert drop.manifest_hash not in {keep.manifest_hash}
    assert check(database, local_store, deep=True).clean


def test_crash_leftovers_are_collected_later(
    chain: BlobChain, database: Database, local_store
) -> None:
    data = random_bytes(60_000_000, seed=3)
    # Past the first batch (16 MiB) plus the chunker's read-ahead (2 x max chunk).
    with pytest.raises(OSError):
        chain.ingest(make_source(list(pieces(data, 1 << 20)), fail_after=40)())
    assert manifest_count(database) == 0
    leftovers = stored_keys(local_store)
    assert leftovers
    # A file with no row at all (a crash between write and row, in an older version).
    stray = random_bytes(1000, seed=4)
    local_store.put(blake3.blake3(stray).hexdigest(), stray)
    # Within the grace period nothing is touched...
    report = collect_garbage(database, local_store, 3600)
    assert report.chunks_removed == 0 and report.orphan_files_adopted == 1
    assert stored_keys(local_store) == leftovers | {blake3.blake3(stray).hexdigest()}
    # ...after it, everything goes (rows of writes cancelled by the failure included).
    rows = chunk_refcounts(database)
    assert set(rows) >= leftovers
    report = collect_garbage(database, local_store, 3600, now=utcnow() + timedelta(hours=2))
    assert report.chunks_removed == len(rows)
    assert stored_keys(local_store) == set()
    assert chunk_refcounts(database) == {}


def test_ingest_intent_protects_chunks_from_gc(
    chain: BlobChain, database: Database, local_store
) -> None:
    # The rows an unfinished ingest registered are fresh: a gc with a grace period skips them.
    with pytest.raises(OSError):
        chain.ingest(make_source(list(pieces(random_bytes(60_000_000), 1 << 20)), fail_after=40)())
    assert stored_keys(local_store)
    assert collect_garbage(database, local_store, 60).chunks_removed == 0


def test_fsck_clean_and_findings(chain: BlobChain, database: Database, local_store) -> None:
    data = random_bytes(4_000_000, seed=5)
    stored = chain.ingest(pieces(data))
    report = check(database, local_store, deep=True)
    assert report.clean, list(report.lines())
    assert report.chunks_checked == len(stored_keys(local_store))

    keys = sorted(stored_keys(local_store))
    local_store.delete(keys[0])
    corrupt = local_store.path(keys[1])
    raw = bytearray(corrupt.read_bytes())
    raw[0] ^= 1
    corrupt.write_bytes(bytes(raw))
    stray = b"nobody knows me"
    local_store.put(blake3.blake3(stray).hexdigest(), stray)

    shallow = check(database, local_store)
    assert shallow.missing == [keys[0]]
    assert shallow.corrupt == []
    assert shallow.orphaned == [blake3.blake3(stray).hexdigest()]
    assert shallow.affected_manifests == [stored.manifest_hash]
    assert not shallow.clean

    deep = check(database, local_store, deep=True)
    assert deep.missing == [keys[0]]
    assert deep.corrupt == [keys[1]]
    assert set(deep.affected_manifests) == {stored.manifest_hash}
    assert any("corrupt chunk" in line for line in deep.lines())


def test_fsck_reports_refcount_mismatch(chain: BlobChain, database: Database, local_store) -> None:
    from sqlalchemy import update

    from oxidav.db.models.blobs import BlobChunk

    chain.ingest([b"some content"])
    key = blake3.blake3(b"some content").hexdigest()
    with database.write() as session:
        session.execute(update(BlobChunk).where(BlobChunk.hash == key).values(refcount=5))
    report = check(database, local_store)
    assert report.refcount_mismatches == [(key, 5, 1)]
