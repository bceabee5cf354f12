"""Streaming ingest: bytes -> FastCDC -> BLAKE3 -> new chunks written -> sync sweep -> manifest.

The order is the durability rule of docs/architecture.md#blobs: chunk bytes are written unsynced,
made durable by sync sweeps, and only then is the manifest row committed — a manifest is never
visible before every byte it names is on stable storage. A failure at any point (the client goes
away, a short body, a store or database error) leaves no manifest and changes no refcount; the
chunks already written stay as unreferenced rows that gc collects after its grace period.

Each batch of chunks is claimed in one write transaction (``catalog.claim_chunks``): the chunks
already referenced are dropped, the others are registered as *intents* (refcount 0, fresh
``orphaned_at``) — which is what stops a concurrent gc from deleting a chunk file being written —
and only those are written. Writes run on a small thread pool (``store.concurrency`` workers, at
least 2; 8 for S3) with at most ``WRITE_AHEAD_BYTES`` of chunks in flight (more for a larger
pool: each writer gets ``WRITE_AHEAD_PER_WRITER``) — about one batch, so the writers drain a
batch while the next one is being chunked — and memory stays flat whatever the content length.
A content that fits in its first batch (any small PUT) starts no thread: one transaction claims
its chunk, the chunk is written and synced, a second transaction creates the manifest.

``publish=False`` leaves out that second transaction: the run ends once every chunk is durable
and returns a ``PendingContent``, whose manifest row is written by its first ``incref`` — inside
the caller's transaction, together with the row that references it (a PUT's node row). The
order still holds: the bytes are synced before that transaction starts, and the manifest becomes
visible in the same commit as its first reference, or not at all. With ``inline_max``, a
content that is one chunk of at most that many bytes is not even written to the store: the
``PendingContent`` carries the chunk, is named by the chunk's hash, and the same ``incref``
keeps it in the chunk's row (``oxidav.blobs.inline``) — no claim, no file, no sync, and no
manifest row.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import BinaryIO

from oxidav.blobs import catalog
from oxidav.blobs.chunk_rows import add_content_chunk
from oxidav.blobs.chunking import DEFAULT_CHUNK_PARAMS, ChunkedContent, ChunkParams
from oxidav.blobs.manifests import MANIFEST_MAGIC, ManifestBuilder
from oxidav.blobs.store import BlobStore
from oxidav.db import Database, Transaction, utcnow

#: A batch (one claim transaction) closes at this many distinct chunks or bytes.
BATCH_CHUNKS = 128
BATCH_BYTES = 8 << 20
#: The first batch closes sooner, so that writing starts early in a streamed body (with 4 MiB
#: chunks the chunker already holds up to 8 MiB of it).
FIRST_BATCH_BYTES = 4 << 20
#: Chunk bytes submitted to the writers and not yet written, at most (plus one chunk): this, or
#: ``WRITE_AHEAD_PER_WRITER`` for each writer thread if that is more, so that every upload of a
#: remote store's pool has a chunk to send (8 S3 writers: 16 MiB).
WRITE_AHEAD_BYTES = 8 << 20
WRITE_AHEAD_PER_WRITER = 2 << 20
#: A background sync sweep starts after this many unsynced chunk writes.
SYNC_EVERY = 128
#: Chunks this ingest already wrote or found referenced are remembered (up to this many) so a
#: repeated chunk is neither queried nor written again.
SEEN_MAX = 1 << 16


@dataclass(frozen=True)
class StoredContent:
    """The result of an ingest: the manifest that names the content, and the content's size,
    BLAKE3 and (when asked for) MD5, all hex."""

    manifest_hash: str
    size: int
    content_hash: str
    md5: str | None = None


@dataclass(frozen=True)
class PendingContent(StoredContent):
    """Content whose chunks are durable but whose manifest row is not written yet
    (``Ingest.run(publish=False)``). It is also the ``ContentRefs`` of the caller's
    transaction: ``incref`` of its own manifest creates the row holding those references
    (or adds them to an existing row); any other hash is counted as ``BlobChain.incref``
    would. Nothing is visible unless that transaction commits; if it does not, the chunks
    stay unreferenced rows that gc collects after its grace period."""

    builder: ManifestBuilder | None = field(default=None, repr=False, compare=False)
    #: The bytes of the content's one chunk, to keep in its row (``oxidav.blobs.inline``).
    inline: bytes | None = field(default=None, repr=False, compare=False)

    @property
    def by_chunk(self) -> bool:
        """The content is named by its one chunk kept in its row and has no manifest row
        (``chunk_rows.add_content_chunk``): its name is then its content hash, which no
        manifest's name ever is."""
        return self.inline is not None and self.manifest_hash == self.content_hash

    def incref(self, session: Transaction, manifest_hash: str, n: int = 1) -> None:
        if n < 0:
            raise ValueError("incref by a negative count")
        if manifest_hash == self.manifest_hash and self.builder is not None:
            if not n:
                return
            inline = self.inline
            if inline is not None and self.by_chunk:
                add_content_chunk(session, self.manifest_hash, inline, n, utcnow())
            else:
                catalog.create_manifest(
                    session, self.builder, self.content_hash, utcnow(), n, inline=self.inline
                )
            return
        catalog.change_manifest_refcount(session, manifest_hash, n)

    def decref(self, session: Transaction, manifest_hash: str, n: int = 1) -> None:
        if n < 0:
            raise ValueError("decref by a negative count")
        catalog.change_manifest_refcount(session, manifest_hash, -n)


class _Writer:
    """Runs ``put_unsynced`` on a bounded pool and sync sweeps on one background thread."""

    def __init__(self, store: BlobStore) -> None:
        self._store = store
        # At least two: one slow file creation (or request) must not stall the next write.
        self._workers = max(2, store.concurrency)
        self.ahead_limit = max(WRITE_AHEAD_BYTES, self._workers * WRITE_AHEAD_PER_WRITER)
        self._pool: ThreadPoolExecutor | None = None
        self._syncer: ThreadPoolExecutor | None = None
        self._pending: collections.deque[tuple[Future[None], int]] = collections.deque()
        self._pending_bytes = 0
        self._sweeps: list[Future[None]] = []
        self._unsynced: list[str] = []
        self.written = 0
        self.written_bytes = 0

    def submit(self, key: str, data: bytes) -> None:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="oxidav-blob-put")
        # Bounded by bytes, not by count: a whole batch can be handed over at once, and the
        # caller goes back to chunking while it is written.
        while self._pending and self._pending_bytes + len(data) > self.ahead_limit:
            self._wait_oldest()
        self._pending.append((self._pool.submit(self._store.put_unsynced, key, data), len(data)))
        self._pending_bytes += len(data)
        self._note(key, data)
        if len(self._unsynced) >= SYNC_EVERY:
            self._sweep()

    def _wait_oldest(self) -> None:
        future, size = self._pending.popleft()
        self._pending_bytes -= size
        future.result()

    def write_inline(self, items: dict[str, bytes]) -> None:
        for key, data in items.items():
            self._store.put_unsynced(key, data)
            self._note(key, data)

    def _note(self, key: str, data: bytes) -> None:
        self._unsynced.append(key)
        self.written += 1
        self.written_bytes += len(data)

    def _sweep(self) -> None:
        # A sweep that already failed stops the ingest now, not at the end.
        for done in [sweep for sweep in self._sweeps if sweep.done()]:
            done.result()
            self._sweeps.remove(done)
        keys, self._unsynced = self._unsynced, []
        if not keys:
            return
        writes = [future for future, _size in self._pending]
        if self._syncer is None:
            self._syncer = ThreadPoolExecutor(1, thread_name_prefix="oxidav-blob-sync")
        self._sweeps.append(self._syncer.submit(self._sync_after, writes, keys))

    def _sync_after(self, writes: Sequence[Future[None]], keys: list[str]) -> None:
        for write in writes:
            write.result()
        self._store.sync(keys)

    def finish(self) -> None:
        """Wait for every write and sweep; raise the first failure."""
        while self._pending:
            self._wait_oldest()
        if self._syncer is None and self._unsynced:
            keys, self._unsynced = self._unsynced, []
            self._store.sync(keys)
        else:
            self._sweep()
        for sweep in self._sweeps:
            sweep.result()
        self.close()

    def close(self) -> None:
        # Writes already handed over (at most ``ahead_limit``) still run after a failure, so
        # every chunk registered as an intent gets its file unless the process dies; pending
        # sweeps are dropped (nothing will be made visible).
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=False)
        if self._syncer is not None:
            self._syncer.shutdown(wait=True, cancel_futures=True)
        self._pool = self._syncer = None


class Ingest:
    """One ingest run; ``BlobChain.ingest`` makes one per call."""

    def __init__(
        self,
        db: Database,
        store: BlobStore,
        params: ChunkParams = DEFAULT_CHUNK_PARAMS,
        inline_max: int = 0,
    ) -> None:
        self.db = db
        self.store = store
        self.params = params
        #: ``run(publish=False)`` keeps a one-chunk content of at most this size in its row.
        self.inline_max = inline_max
        self._seen: set[str] = set()
        self._writer = _Writer(store)

    @property
    def written_chunks(self) -> int:
        return self._writer.written

    @property
    def written_bytes(self) -> int:
        return self._writer.written_bytes

    def run(
        self,
        source: BinaryIO | Iterable[bytes],
        expected_length: int | None = None,
        md5: bool = False,
        publish: bool = True,
    ) -> StoredContent:
        """Ingest ``source``; ``publish=False``: return a ``PendingContent`` instead of
        committing the manifest row (see the module docstring)."""
        content = ChunkedContent(source, expected_length, md5, self.params)
        builder = ManifestBuilder()
        batch: dict[str, bytes] = {}
        batch_bytes = 0
        batch_limit = FIRST_BATCH_BYTES
        inline: bytes | None = None
        try:
            for chunk in content:
                builder.add(chunk.digest, len(chunk.data))
                key = chunk.key
                if key in self._seen or key in batch:
                    continue
                batch[key] = chunk.data
                batch_bytes += len(chunk.data)
                if len(batch) >= BATCH_CHUNKS or batch_bytes >= batch_limit:
                    self._flush(batch, final=False)
                    batch, batch_bytes, batch_limit = {}, 0, BATCH_BYTES
            if not publish and builder.count == len(batch) == 1 and batch_bytes <= self.inline_max:
                (inline,) = batch.values()  # kept in its row by the caller's transaction
            else:
                self._flush(batch, final=True)
            self._writer.finish()
        except BaseException:
            self._writer.close()
            raise
        if not publish:
            if inline is not None and not inline.startswith(MANIFEST_MAGIC):
                # Its one chunk's hash is its content hash, and names it. (A chunk whose bytes
                # begin like a manifest's encoding keeps a manifest row: no content named by a
                # chunk can then share a name with a manifest.)
                name = content.content_hash
                return PendingContent(name, builder.size, name, content.md5, builder, inline)
            return PendingContent(
                builder.hash, builder.size, content.content_hash, content.md5, builder, inline
            )
        with self.db.write() as session:
            catalog.create_manifest(session, builder, content.content_hash, utcnow())
        return StoredContent(builder.hash, builder.size, content.content_hash, content.md5)

    def _flush(self, batch: dict[str, bytes], final: bool) -> None:
        if not batch:
            return
        with self.db.write_core() as connection:
            claimed = catalog.claim_chunks(
                connection, {key: len(data) for key, data in batch.items()}, utcnow()
            )
        new = {key: data for key, data in batch.items() if key in claimed}
        if new:
            if (
                final
                and self._writer.written == 0
                and (len(new) == 1 or self.store.concurrency == 1)
            ):
                # A small content: one batch, no pool threads worth starting.
                self._writer.write_inline(new)
            else:
                for key, data in new.items():
                    self._writer.submit(key, data)
        if len(self._seen) < SEEN_MAX:
            self._seen.update(batch)


__all__ = [
    "BATCH_BYTES",
    "BATCH_CHUNKS",
    "FIRST_BATCH_BYTES",
    "WRITE_AHEAD_BYTES",
    "WRITE_AHEAD_PER_WRITER",
    "Ingest",
    "PendingContent",
    "StoredContent",
]
