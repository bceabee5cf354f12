"""Ingest: a database failure mid-ingest, the write-ahead bound, concurrent ingests of one
content, the small-content path, the claim of chunks and the pending content whose manifest
its first reference writes (SQLite + PG)."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator

import blake3
import pytest
from sqlalchemy import text

from oxidav.blobs import BlobChain, IncompleteContentError, LocalBlobStore, StoredContent, catalog
from oxidav.blobs.chunking import CDC_MAX, CDC_MIN, ChunkedContent, ChunkParams
from oxidav.blobs.fsck import check
from oxidav.blobs.ingest import (
    BATCH_BYTES,
    WRITE_AHEAD_BYTES,
    WRITE_AHEAD_PER_WRITER,
    PendingContent,
)
from oxidav.db import Database, utcnow
from tests.support.blobs import (
    RecordingStore,
    assert_only_orphans_added,
    chunk_refcounts,
    entry_count,
    manifest_count,
    pieces,
    random_bytes,
)
from tests.support.engine_events import recorded_commits, recorded_statements

PIECE = 1 << 20


def read_all(chain: BlobChain, manifest: str) -> bytes:
    with chain.open(manifest) as reader:
        return reader.read()


def test_database_failure_mid_ingest_leaves_no_manifest_and_no_refcount_change(
    database: Database, local_store: LocalBlobStore
) -> None:
    store = RecordingStore(local_store)
    chain = BlobChain(database, store)
    kept = chain.ingest(pieces(random_bytes(3_000_000, seed=40)))
    before = chunk_refcounts(database)
    data = random_bytes(100_000_000, seed=41)
    consumed: list[int] = []

    def source() -> Iterator[bytes]:
        for i, piece in enumerate(pieces(data, PIECE)):
            consumed.append(i)
            if i == 20:  # past the first batches: the next claim finds no chunk table
                with database.engine.begin() as conn:
                    conn.execute(text("ALTER TABLE blob_chunks RENAME TO blob_chunks_away"))
            yield piece

    try:
        with pytest.raises(Exception, match="blob_chunks"):
            chain.ingest(source())
    finally:
        with database.engine.begin() as conn:
            conn.execute(text("ALTER TABLE blob_chunks_away RENAME TO blob_chunks"))
    # The failed claim stopped the ingest: the rest of the body was not read.
    assert len(consumed) < len(data) // PIECE
    assert_only_orphans_added(database, before, store, manifests=1)
    assert read_all(chain, kept.manifest_hash) == random_bytes(3_000_000, seed=40)
    # The failed ingest left nothing half-done: the same content now ingests cleanly.
    stored = chain.ingest(pieces(data, PIECE))
    assert stored.content_hash == blake3.blake3(data).hexdigest()


class _SlowStore(RecordingStore):
    """A store whose unsynced writes are durable writes (an fsync each: a slow disk), and which
    counts the bytes whose write has finished."""

    def __init__(self, inner: LocalBlobStore) -> None:
        super().__init__(inner)
        self.done_bytes = 0

    def put_unsynced(self, key: str, data: bytes) -> None:
        self.put(key, data)
        with self._lock:
            self.done_bytes += len(data)


def test_chunks_in_flight_stay_bounded_when_the_store_is_slow(
    database: Database, local_store: LocalBlobStore
) -> None:
    store = _SlowStore(local_store)
    chain = BlobChain(database, store)
    data = random_bytes(120_000_000, seed=42)
    ahead: list[int] = []

    def source() -> Iterator[bytes]:
        consumed = 0
        for piece in pieces(data, PIECE):
            ahead.append(consumed - store.done_bytes)
            consumed += len(piece)
            yield piece

    stored = chain.ingest(source(), expected_length=len(data))
    assert store.put_bytes == len(data)
    # Read from the body but not yet written: the write-ahead, the batch being gathered, the
    # chunker's buffer and one piece — never the content.
    bound = WRITE_AHEAD_BYTES + BATCH_BYTES + 2 * CDC_MAX + PIECE
    assert max(ahead) <= bound < len(data)
    assert read_all(chain, stored.manifest_hash) == data


class _PoolStore(RecordingStore):
    """A store with a pool of ``POOL`` writers (a remote store's ``concurrency``) whose first
    ``POOL`` writes wait until all of them are in flight at once."""

    POOL = 8

    def __init__(self, inner: LocalBlobStore) -> None:
        super().__init__(inner)
        self.all_in_flight = threading.Barrier(self.POOL, timeout=20)
        self.started = 0

    @property
    def concurrency(self) -> int:
        return self.POOL

    def put_unsynced(self, key: str, data: bytes) -> None:
        with self._lock:
            self.started += 1
            first = self.started <= self.POOL
        if first:
            self.all_in_flight.wait()  # BrokenBarrierError if they never are
        super().put_unsynced(key, data)


def test_a_pool_of_writers_is_kept_busy(database: Database, local_store: LocalBlobStore) -> None:
    """Every writer of a remote store's pool gets a chunk: the write-ahead grows with the pool
    (``WRITE_AHEAD_PER_WRITER`` each), so 8 uploads run at once even where 8 chunks are more
    than ``WRITE_AHEAD_BYTES`` (chunks of 1-2 MiB here)."""
    store = _PoolStore(local_store)
    params = ChunkParams(1 << 20, 1 << 20, 2 << 20)
    data = random_bytes(40_000_000, seed=44)
    sizes = [len(chunk.data) for chunk in ChunkedContent(pieces(data, PIECE), params=params)]
    first = sum(sizes[: _PoolStore.POOL])
    assert WRITE_AHEAD_BYTES < first <= _PoolStore.POOL * WRITE_AHEAD_PER_WRITER
    stored = BlobChain(database, store, params).ingest(pieces(data, PIECE))
    assert stored.content_hash == blake3.blake3(data).hexdigest()
    assert store.started == len(sizes)


def test_concurrent_ingests_of_one_content(
    chain: BlobChain, database: Database, local_store: LocalBlobStore
) -> None:
    data = random_bytes(40_000_000, seed=43)  # several batches
    results: list[StoredContent | BaseException] = []
    lock = threading.Lock()

    def ingest() -> None:
        try:
            stored: StoredContent | BaseException = chain.ingest(pieces(data, PIECE))
        except BaseException as exc:  # reported below
            stored = exc
        with lock:
            results.append(stored)

    threads = [threading.Thread(target=ingest) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(isinstance(r, StoredContent) for r in results), results
    assert len({r.manifest_hash for r in results if isinstance(r, StoredContent)}) == 1
    assert manifest_count(database) == 1
    assert sum(chunk_refcounts(database).values()) == entry_count(database)
    manifest = results[0].manifest_hash  # type: ignore[union-attr]
    assert read_all(chain, manifest) == data
    report = check(database, local_store, deep=True)
    assert report.clean, list(report.lines())


@pytest.mark.parametrize("size", [1, 4096, CDC_MIN - 1, CDC_MIN])
def test_small_content_is_one_chunk_as_fastcdc_cuts_it(size: int) -> None:
    data = random_bytes(size, seed=44)
    announced = list(ChunkedContent(pieces(data, 1000), expected_length=size))
    streamed = list(ChunkedContent(pieces(data, 1000)))  # no length: FastCDC itself
    assert announced == streamed and len(announced) == 1
    assert announced[0].data == data


@pytest.mark.parametrize("sent", [99, 101, 10_000])
def test_small_content_of_the_wrong_length_is_refused(
    chain: BlobChain, database: Database, sent: int
) -> None:
    source = io.BytesIO(random_bytes(sent, seed=45))
    with pytest.raises(IncompleteContentError):
        chain.ingest(source, expected_length=100)
    assert source.tell() <= 101  # a long body is not drained
    assert manifest_count(database) == 0
    assert all(v == 0 for v in chunk_refcounts(database).values())


def test_small_content_takes_two_transactions(
    database: Database, local_store: LocalBlobStore
) -> None:
    store = RecordingStore(local_store)
    chain = BlobChain(database, store)
    with recorded_commits(database.engine) as commits:
        stored = chain.ingest([b"a small file"], expected_length=12)
        assert len(commits) == 2  # claim the chunk, then the manifest
        commits.clear()
        assert chain.ingest([b"a small file"], expected_length=12) == stored
        assert len(commits) == 2
    assert store.puts == store.synced == [blake3.blake3(b"a small file").hexdigest()]


def test_claim_returns_only_chunks_to_write(chain: BlobChain, database: Database) -> None:
    chain.ingest(pieces(random_bytes(2_000_000, seed=46)))  # its manifest is unreferenced...
    referenced = set(chunk_refcounts(database))
    assert all(chunk_refcounts(database).values())  # ...but its chunks are used by it
    fresh = {"ab" * 32: 10, "cd" * 32: 20}
    with database.write() as session:
        claimed = catalog.claim_chunks(session, dict.fromkeys(referenced, 1) | fresh, utcnow())
    assert claimed == set(fresh)
    refs = chunk_refcounts(database)
    assert refs["ab" * 32] == refs["cd" * 32] == 0  # registered as intents
    # An intent (refcount 0) is never trusted: it is claimed, and written, again.
    with database.write() as session:
        assert catalog.claim_chunks(session, {"ab" * 32: 10}, utcnow()) == {"ab" * 32}


def test_a_pending_content_publishes_its_manifest_with_its_first_reference(
    database: Database, local_store: LocalBlobStore
) -> None:
    """``publish=False``: one transaction (the claim) before the bytes are synced, no manifest
    row; the manifest appears, already referenced, in the caller's transaction, and a
    rolled-back caller leaves only unreferenced chunks (gc collects them)."""
    store = RecordingStore(local_store)
    chain = BlobChain(database, store)
    with recorded_commits(database.engine) as commits:
        pending = chain.ingest([b"a pending file"], expected_length=14, publish=False)
        assert len(commits) == 1  # the claim; no manifest transaction
    assert isinstance(pending, PendingContent)
    key = blake3.blake3(b"a pending file").hexdigest()
    assert store.puts == store.synced == [key]  # durable before any manifest exists
    assert manifest_count(database) == 0
    with pytest.raises(RuntimeError), database.write() as session:
        pending.incref(session, pending.manifest_hash)
        raise RuntimeError("the node write failed")
    assert manifest_count(database) == 0 and chunk_refcounts(database) == {key: 0}
    with database.write() as session:
        pending.incref(session, pending.manifest_hash)
    assert chain.refcount(pending.manifest_hash) == 1
    assert chunk_refcounts(database) == {key: 1}
    assert read_all(chain, pending.manifest_hash) == b"a pending file"
    # The same content again: its manifest row exists, the reference is added to it.
    again = chain.ingest([b"a pending file"], expected_length=14, publish=False)
    assert again == pending
    with database.write() as session:
        again.incref(session, again.manifest_hash, 2)
        again.decref(session, again.manifest_hash)
    assert chain.refcount(pending.manifest_hash) == 2
    assert chunk_refcounts(database) == {key: 1}
    assert check(database, store, deep=True).clean


def test_one_chunk_claim_is_one_statement(chain: BlobChain, database: Database) -> None:
    chain.ingest([b"referenced chunk"])
    referenced = blake3.blake3(b"referenced chunk").hexdigest()
    with recorded_statements(database.engine) as seen, database.write() as session:
        assert catalog.claim_chunks(session, {referenced: 16}, utcnow()) == set()
        assert catalog.claim_chunks(session, {"ef" * 32: 5}, utcnow()) == {"ef" * 32}
        assert catalog.claim_chunks(session, {"ef" * 32: 5}, utcnow()) == {"ef" * 32}
    assert len([s for s in seen if "blob_chunks" in s]) == 3
    assert chunk_refcounts(database)[referenced] == 1
    assert chunk_refcounts(database)["ef" * 32] == 0
