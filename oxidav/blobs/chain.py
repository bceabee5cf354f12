"""``BlobChain``: the one object the rest of oxidav uses to store and read content.

It ties a ``BlobStore`` (bytes) to the database (chunk and manifest rows): ``ingest`` a stream,
take and drop references with ``incref`` / ``decref`` inside the caller's transaction, ``open`` a
content for reading, ``concat`` contents without copying bytes. Maintenance (gc, fsck, migrate)
lives in its own modules and works on the same two halves.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import BinaryIO

import blake3

from oxidav.blobs import catalog
from oxidav.blobs.chunking import DEFAULT_CHUNK_PARAMS, ChunkParams
from oxidav.blobs.ingest import Ingest, StoredContent
from oxidav.blobs.inline import INLINE_LIMIT, InlineChunks
from oxidav.blobs.manifest_cache import cache_for
from oxidav.blobs.manifests import ManifestBuilder
from oxidav.blobs.reader import ContentReader
from oxidav.blobs.store import BlobStore
from oxidav.blobs.urls import store_from_settings
from oxidav.db import Database, Transaction, utcnow
from oxidav.settings import Settings


class BlobChain:
    """Content-addressed, chunked, deduplicated content storage (docs/architecture.md#blobs).

    Thread-safe: every call uses its own short sessions; the store is shared.
    """

    def __init__(
        self,
        db: Database,
        store: BlobStore,
        chunk_params: ChunkParams = DEFAULT_CHUNK_PARAMS,
        inline_max: int = 0,
    ) -> None:
        if not 0 <= inline_max <= INLINE_LIMIT:
            raise ValueError(f"inline_max must be between 0 and {INLINE_LIMIT}")
        self.db = db
        self.store = store
        self.chunk_params = chunk_params
        #: ``ingest(publish=False)`` keeps a one-chunk content of at most this many bytes in
        #: the database (``oxidav.blobs.inline``); 0: never.
        self.inline_max = inline_max
        #: The process's cache of chunk lists of ``db`` (looked up once, not per ``open``).
        self.manifests = cache_for(db)
        self.inline = InlineChunks(db)

    @classmethod
    def from_settings(cls, settings: Settings, db: Database) -> BlobChain:
        """The chain configured by ``settings``: ``blob_store`` URL, ``blob_cache`` and
        ``blob_cache_bytes``, ``encryption_keys``, ``blob_chunk_min`` / ``_avg`` / ``_max``,
        ``blob_inline_max`` (0 with encryption keys: database rows are not encrypted)."""
        params = ChunkParams(
            settings.blob_chunk_min, settings.blob_chunk_avg, settings.blob_chunk_max
        )
        inline_max = 0 if settings.encryption_keys else settings.blob_inline_max
        return cls(db, store_from_settings(settings), params, inline_max)

    def close(self) -> None:
        self.store.close()

    # -- writing -------------------------------------------------------------------------

    def ingest(
        self,
        source: BinaryIO | Iterable[bytes],
        expected_length: int | None = None,
        md5: bool = False,
        publish: bool = True,
    ) -> StoredContent:
        """Store the bytes of ``source`` (a file object or an iterable of byte strings).

        Streams source -> FastCDC -> BLAKE3 -> only chunks not yet referenced are written ->
        sync sweep -> manifest row committed. The manifest's refcount stays 0: the caller takes
        its reference with ``incref`` in its own transaction (an unreferenced manifest is
        collected by gc after the grace period). Raises ``IncompleteContentError`` when
        ``expected_length`` is given and the source holds a different number of bytes; then no
        manifest is visible. Memory stays flat. The empty content is valid (no chunks).
        ``md5=True`` also computes the MD5 of the content (``StoredContent.md5``).
        ``publish=False`` returns once the chunks are durable, with a ``PendingContent``
        whose manifest row its own ``incref`` writes in the caller's transaction (a PUT
        then commits manifest and node row together: one transaction less); a content that
        is one chunk of at most ``inline_max`` bytes then goes into the database with them
        instead of the store, named by its chunk (``oxidav.blobs.inline``).
        """
        ingest = Ingest(self.db, self.store, self.chunk_params, self.inline_max)
        return ingest.run(source, expected_length, md5, publish)

    def concat(self, manifest_hashes: Sequence[str]) -> StoredContent:
        """A manifest whose chunks are those of ``manifest_hashes``, in order (Nextcloud chunked
        upload assembly). No chunk is copied or written; the parts' chunk lists are copied
        row-wise in the database. The content BLAKE3 is computed by reading the parts once
        (BLAKE3 of a concatenation cannot be derived from the parts' hashes).
        Raises ``ManifestNotFoundError`` for an unknown part."""
        with self.db.read() as session:
            parts = [catalog.require_manifest(session, h) for h in manifest_hashes]
        if len(parts) == 1:
            part = parts[0]
            return StoredContent(part.hash, part.size, part.content_hash)
        builder = ManifestBuilder()
        content = blake3.blake3()
        for part in parts:
            with self.open(part.hash) as reader:
                for entry in catalog.iter_entries(self.db, part.hash):
                    builder.add(bytes.fromhex(entry.chunk_hash), entry.size)
                for piece in reader.iter_range(0, part.size, 1 << 20):
                    content.update(piece)
        content_hash = content.hexdigest()
        with self.db.write() as session:
            catalog.create_concatenation(session, builder.hash, parts, content_hash, utcnow())
        return StoredContent(builder.hash, builder.size, content_hash)

    # -- references ----------------------------------------------------------------------

    def incref(self, session: Transaction, manifest_hash: str, n: int = 1) -> None:
        """Take ``n`` references on a manifest, in the caller's transaction ``session``.
        Raises ``ManifestNotFoundError``."""
        if n < 0:
            raise ValueError("incref by a negative count")
        catalog.change_manifest_refcount(session, manifest_hash, n)

    def decref(self, session: Transaction, manifest_hash: str, n: int = 1) -> None:
        """Drop ``n`` references on a manifest, in the caller's transaction ``session``. At zero
        the content becomes garbage that gc collects after its grace period. Raises
        ``ManifestNotFoundError``, or ``RefcountError`` if fewer than ``n`` references exist."""
        if n < 0:
            raise ValueError("decref by a negative count")
        catalog.change_manifest_refcount(session, manifest_hash, -n)

    # -- reading -------------------------------------------------------------------------

    def stat(self, manifest_hash: str) -> StoredContent:
        """Size and content hash of a manifest. Raises ``ManifestNotFoundError``."""
        with self.db.read() as session:
            manifest = catalog.require_manifest(session, manifest_hash)
            return StoredContent(manifest.hash, manifest.size, manifest.content_hash)

    def refcount(self, manifest_hash: str) -> int:
        """The current reference count of a manifest. Raises ``ManifestNotFoundError``."""
        with self.db.read() as session:
            return catalog.require_manifest(session, manifest_hash).refcount

    def open(self, manifest_hash: str, size: int | None = None) -> ContentReader:
        """A seekable file object over the content. Raises ``ManifestNotFoundError``.

        ``size``: the content's size when the caller already holds it (a file node records
        it), which saves the manifest read; the manifest is then first read by ``read``."""
        if size is None:
            size = self.stat(manifest_hash).size
        return ContentReader(self.db, self.store, manifest_hash, size, self.manifests, self.inline)


__all__ = ["BlobChain"]
