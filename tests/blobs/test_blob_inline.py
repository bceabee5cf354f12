"""Small chunks kept in the database (``oxidav.blobs.inline``), SQLite + PostgreSQL: what a PUT
of a small content stores (its chunk's row, named by that chunk: no manifest row), how it is
read, counted, checked, deduplicated, collected and migrated."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select, update

from oxidav.blobs import BlobChain, LocalBlobStore, StoredContent
from oxidav.blobs.catalog import ManifestNotFoundError, RefcountError
from oxidav.blobs.fsck import check
from oxidav.blobs.gc import collect_garbage
from oxidav.blobs.ingest import PendingContent
from oxidav.blobs.manifests import MANIFEST_MAGIC
from oxidav.blobs.migrate import migrate
from oxidav.blobs.store import BlobIntegrityError
from oxidav.db import Database, utcnow
from oxidav.db.models.blobs import BlobChunk
from oxidav.settings import Settings, SettingsError, load_settings
from tests.support.blobs import chunk_refcounts, manifest_count, random_bytes

INLINE_MAX = 16 << 10


@pytest.fixture
def inline_chain(database: Database, local_store: LocalBlobStore) -> BlobChain:
    return BlobChain(database, local_store, inline_max=INLINE_MAX)


def put(chain: BlobChain, data: bytes) -> StoredContent:
    """What a PUT does: ingest unpublished, then take the reference in one transaction."""
    stored = chain.ingest([data], expected_length=len(data), publish=False)
    assert isinstance(stored, PendingContent)
    with chain.db.write() as session:
        stored.incref(session, stored.manifest_hash)
    return stored


def kept_bytes(database: Database) -> dict[str, bytes | None]:
    with database.read() as session:
        rows = session.execute(select(BlobChunk.hash, BlobChunk.data))
        return {key: None if data is None else bytes(data) for key, data in rows}


def content_refs(database: Database) -> dict[str, int | None]:
    with database.read() as session:
        return dict(session.execute(select(BlobChunk.hash, BlobChunk.content_refs)).all())


def read(chain: BlobChain, stored: StoredContent) -> bytes:
    with chain.open(stored.manifest_hash) as reader:
        return reader.read()


def test_a_small_put_keeps_its_chunk_in_the_database(
    inline_chain: BlobChain, database: Database, local_store: LocalBlobStore
) -> None:
    data = random_bytes(4096)
    stored = put(inline_chain, data)
    # No blob, no sync, no manifest row: the content is named by its one chunk, whose row
    # holds the bytes and the reference.
    assert set(local_store.iter_keys()) == set()
    assert stored.manifest_hash == stored.content_hash
    assert manifest_count(database) == 0
    assert list(kept_bytes(database).values()) == [data]
    assert chunk_refcounts(database) == {stored.content_hash: 1}
    assert content_refs(database) == {stored.content_hash: 1}
    assert inline_chain.refcount(stored.manifest_hash) == 1
    assert inline_chain.stat(stored.manifest_hash) == StoredContent(
        stored.content_hash, 4096, stored.content_hash
    )
    assert read(inline_chain, stored) == data
    with inline_chain.open(stored.manifest_hash) as reader:
        assert b"".join(reader.iter_range(100, 200)) == data[100:200]
        reader.seek(4000)
        assert reader.read(50) == data[4000:4050]
    report = check(database, local_store, deep=True)
    assert report.clean and report.chunks_checked == 1, list(report.lines())


def test_larger_contents_and_published_ingests_go_to_the_store(
    inline_chain: BlobChain, database: Database, local_store: LocalBlobStore
) -> None:
    over = random_bytes(INLINE_MAX + 1, seed=2)
    big = put(inline_chain, over)
    published = inline_chain.ingest([b"small, but published"])
    assert set(local_store.iter_keys()) == {big.content_hash, published.content_hash}
    assert all(data is None for data in kept_bytes(database).values())
    assert read(inline_chain, big) == over
    # inline_max 0 (the default of a chain built by hand): every chunk goes to the store.
    plain = BlobChain(database, local_store)
    tiny = put(plain, b"tiny")
    assert tiny.content_hash in set(local_store.iter_keys())


def test_an_uncommitted_put_leaves_nothing(
    inline_chain: BlobChain, database: Database, local_store: LocalBlobStore
) -> None:
    stored = inline_chain.ingest([b"never committed"], publish=False)
    assert isinstance(stored, PendingContent)
    with pytest.raises(RuntimeError), database.write() as session:
        stored.incref(session, stored.manifest_hash)
        raise RuntimeError("the PUT fails after the content was counted")
    assert manifest_count(database) == 0
    assert kept_bytes(database) == {}
    assert set(local_store.iter_keys()) == set()


def test_the_same_content_twice_shares_one_name(
    inline_chain: BlobChain, database: Database, local_store: LocalBlobStore
) -> None:
    data = b"the same small file, twice"
    first, second = put(inline_chain, data), put(inline_chain, data)
    assert first.manifest_hash == second.manifest_hash == first.content_hash
    assert inline_chain.refcount(first.manifest_hash) == 2
    assert chunk_refcounts(database) == {first.content_hash: 2}  # two content references
    assert content_refs(database) == {first.content_hash: 2}
    assert check(database, local_store, deep=True).clean


def test_references_on_a_content_named_by_its_chunk(
    inline_chain: BlobChain, database: Database, local_store: LocalBlobStore
) -> None:
    stored = put(inline_chain, b"copied, then deleted")
    with database.write() as session:  # a COPY
        inline_chain.incref(session, stored.manifest_hash, 2)
    assert chunk_refcounts(database) == content_refs(database) == {stored.content_hash: 3}
    with pytest.raises(RefcountError), database.write() as session:
        inline_chain.decref(session, stored.manifest_hash, 4)
    assert chunk_refcounts(database) == {stored.content_hash: 3}
    with database.write() as session:
        inline_chain.decref(session, stored.manifest_hash, 3)
    with database.read() as session:
        row = session.execute(select(BlobChunk.refcount, BlobChunk.orphaned_at)).one()
    assert row.refcount == 0 and row.orphaned_at is not None  # garbage, after a grace period
    # Like an orphaned manifest, it may gain a reference again until gc collects it: its
    # bytes are in its row.
    with database.write() as session:
        inline_chain.incref(session, stored.manifest_hash)
    with database.read() as session:
        row = session.execute(select(BlobChunk.refcount, BlobChunk.orphaned_at)).one()
    assert row.refcount == 1 and row.orphaned_at is None
    assert read(inline_chain, stored) == b"copied, then deleted"
    assert check(database, local_store, deep=True).clean


def test_an_unreferenced_content_whose_blob_may_be_gone_is_not_revived(
    inline_chain: BlobChain, database: Database, local_store: LocalBlobStore
) -> None:
    data = random_bytes(3000, seed=12)
    longer = inline_chain.ingest([data])  # its one chunk is a blob...
    with database.write() as session:
        inline_chain.incref(session, longer.manifest_hash)
    stored = put(inline_chain, data)  # ...which the content named by that chunk relies on
    assert kept_bytes(database) == {stored.content_hash: None}
    with database.write() as session:
        inline_chain.decref(session, stored.manifest_hash)
        inline_chain.incref(session, stored.manifest_hash)  # the manifest still uses the blob
        inline_chain.decref(session, stored.manifest_hash)
        inline_chain.decref(session, longer.manifest_hash)
    later = utcnow() + timedelta(seconds=3601)
    assert collect_garbage(database, local_store, 3600, now=later).manifests_removed == 1
    # Nothing uses the chunk now: a gc may be deleting its blob, so the name stays dead.
    assert chunk_refcounts(database) == {stored.content_hash: 0}
    with pytest.raises(ManifestNotFoundError), database.write() as session:
        inline_chain.incref(session, stored.manifest_hash)
    # A new PUT of the bytes is a new content again, kept in its row.
    again = put(inline_chain, data)
    assert kept_bytes(database) == {again.content_hash: data}
    assert read(inline_chain, again) == data


def test_a_chunk_that_is_only_part_of_a_manifest_names_no_content(
    inline_chain: BlobChain, database: Database
) -> None:
    published = inline_chain.ingest([b"published: a manifest of one entry"])
    with database.write() as session:
        inline_chain.incref(session, published.manifest_hash)
    assert published.manifest_hash != published.content_hash
    with pytest.raises(ManifestNotFoundError), database.write() as session:
        inline_chain.incref(session, published.content_hash)
    with pytest.raises(ManifestNotFoundError):
        inline_chain.open(published.content_hash).read()


def test_a_chunk_that_begins_like_a_manifest_keeps_a_manifest_row(
    inline_chain: BlobChain, database: Database, local_store: LocalBlobStore
) -> None:
    """Manifest names hash ``MANIFEST_MAGIC`` + entries: a content that begins so is not named
    by its chunk, so no content name can be a manifest's."""
    data = MANIFEST_MAGIC + random_bytes(40, seed=11)
    stored = put(inline_chain, data)
    assert stored.manifest_hash != stored.content_hash
    assert manifest_count(database) == 1
    assert kept_bytes(database) == {stored.content_hash: data}
    assert content_refs(database) == {stored.content_hash: None}  # never a content itself
    assert read(inline_chain, stored) == data
    assert check(database, local_store, deep=True).clean


def test_a_referenced_stored_chunk_is_reused_as_it_is(
    inline_chain: BlobChain, database: Database, local_store: LocalBlobStore
) -> None:
    data = random_bytes(3000, seed=3)
    # The content exists as a blob, referenced by a longer content's manifest...
    longer = inline_chain.ingest([data])
    with database.write() as session:
        inline_chain.incref(session, longer.manifest_hash)
    # ...so a PUT of it alone reuses the stored chunk and keeps no copy in its row.
    stored = put(inline_chain, data)
    assert kept_bytes(database) == {stored.content_hash: None}
    assert chunk_refcounts(database) == {stored.content_hash: 2}  # the entry and the content
    assert content_refs(database) == {stored.content_hash: 1}
    assert stored.manifest_hash == stored.content_hash != longer.manifest_hash
    assert read(inline_chain, stored) == data
    assert check(database, local_store, deep=True).clean


def test_an_unreferenced_stored_chunk_is_given_the_bytes(
    inline_chain: BlobChain, database: Database, local_store: LocalBlobStore
) -> None:
    data = random_bytes(5000, seed=4)
    orphan = inline_chain.ingest([data])  # published, never referenced
    later = utcnow() + timedelta(seconds=7200)
    assert collect_garbage(database, local_store, 3600, now=later).manifests_removed == 1
    # Left: an unreferenced chunk row whose blob the next gc may be deleting.
    assert chunk_refcounts(database) == {orphan.content_hash: 0}
    assert orphan.content_hash in set(local_store.iter_keys())
    stored = put(inline_chain, data)
    assert kept_bytes(database) == {stored.content_hash: data}
    assert chunk_refcounts(database) == {stored.content_hash: 1}
    # Even once the blob is gone, the content reads from the row.
    local_store.delete(stored.content_hash)
    assert read(inline_chain, stored) == data
    assert check(database, local_store, deep=True).orphaned == []


def test_gc_collects_kept_chunks_like_any_other(
    inline_chain: BlobChain, database: Database, local_store: LocalBlobStore
) -> None:
    stored = put(inline_chain, b"soon garbage")
    kept = put(inline_chain, b"still referenced")
    with database.write() as session:
        inline_chain.decref(session, stored.manifest_hash)
    now = utcnow()
    assert collect_garbage(database, local_store, 3600, now=now).chunks_removed == 0  # grace
    # No manifest to collect first: the chunk row goes once its own grace period is over.
    report = collect_garbage(database, local_store, 3600, now=now + timedelta(seconds=3601))
    assert report.manifests_removed == 0
    assert report.chunks_removed == 1 and report.bytes_freed == len(b"soon garbage")
    assert kept_bytes(database) == {kept.content_hash: b"still referenced"}
    assert read(inline_chain, kept) == b"still referenced"


def test_corrupt_kept_bytes_are_never_served_and_fsck_finds_them(
    inline_chain: BlobChain, database: Database, local_store: LocalBlobStore
) -> None:
    data = random_bytes(2048, seed=6)
    stored = put(inline_chain, data)
    with database.write() as session:
        session.execute(
            update(BlobChunk)
            .where(BlobChunk.hash == stored.content_hash)
            .values(data=data[:-1] + bytes([data[-1] ^ 1]))
        )
    with pytest.raises(BlobIntegrityError):
        read(inline_chain, stored)
    with inline_chain.open(stored.manifest_hash) as reader, pytest.raises(BlobIntegrityError):
        b"".join(reader.iter_range(0, 10))
    assert check(database, local_store).clean  # nothing to find without reading bytes
    report = check(database, local_store, deep=True)
    assert report.corrupt == [stored.content_hash]
    assert report.affected_manifests == [stored.manifest_hash]


def test_fsck_counts_content_references_into_the_chunk_refcount(
    inline_chain: BlobChain, database: Database, local_store: LocalBlobStore
) -> None:
    stored = put(inline_chain, b"counted twice")
    with database.write() as session:
        inline_chain.incref(session, stored.manifest_hash)
    assert check(database, local_store).clean
    with database.write() as session:
        session.execute(update(BlobChunk).values(refcount=5))
    report = check(database, local_store)
    assert report.refcount_mismatches == [(stored.content_hash, 5, 2)]


def test_concatenation_with_a_kept_part(
    inline_chain: BlobChain, database: Database, local_store: LocalBlobStore
) -> None:
    small, large = random_bytes(1000, seed=7), random_bytes(700_000, seed=8)
    parts = [put(inline_chain, small), inline_chain.ingest([large]), put(inline_chain, small)]
    whole = inline_chain.concat([part.manifest_hash for part in parts])
    with database.write() as session:
        inline_chain.incref(session, whole.manifest_hash)
    assert read(inline_chain, whole) == small + large + small
    with inline_chain.open(whole.manifest_hash) as reader:
        assert b"".join(reader.iter_range(900, 1100)) == (small + large)[900:1100]
    assert check(database, local_store, deep=True).clean


def test_migrate_has_nothing_to_copy_for_kept_chunks(
    inline_chain: BlobChain, database: Database, tmp_path: Path
) -> None:
    small = put(inline_chain, b"kept in the database")
    large = put(inline_chain, random_bytes(INLINE_MAX * 2, seed=9))
    target = LocalBlobStore(tmp_path / "target")
    report = migrate(database, inline_chain.store, target, target.root.as_uri(), tmp_path)
    assert report.failed == [] and report.copied == 1
    moved = BlobChain(database, target)
    assert read(moved, small) == b"kept in the database"
    assert read(moved, large) == random_bytes(INLINE_MAX * 2, seed=9)


def test_settings_bound_the_size_and_encryption_turns_it_off(
    database: Database, tmp_path: Path
) -> None:
    assert Settings().blob_inline_max == 16 << 10
    with pytest.raises(SettingsError, match="blob_inline_max"):
        load_settings(
            env={"OXIDAV_BLOB_INLINE_MAX": str(1 << 20), "OXIDAV_DATA_DIR": str(tmp_path)}
        )
    plain = Settings(data_dir=tmp_path)
    assert BlobChain.from_settings(plain, database).inline_max == 16 << 10
    encrypted = plain.replace(encryption_keys=("A" * 43 + "=",))
    assert BlobChain.from_settings(encrypted, database).inline_max == 0
